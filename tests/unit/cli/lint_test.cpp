// trainctl lint: how it reads a batch script, and one script per rule that fails it with
// that rule's line (the cluster and the earlier runs' figures are given, as lint_command
// would read them from scontrol and the stores).
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "batch_script.hpp"
#include "fixture.hpp"
#include "lint_rules.hpp"
#include "process_group_timeout.hpp"

namespace trainctl {
namespace {

using trainctl_test::temp_dir;

class LintTest : public ::testing::Test {
 protected:
  temp_dir dir;
  cluster_facts cluster;
  run_figures measured;
  std::map<std::string, std::string> environment;

  LintTest() {
    cluster.preempt_type = "preempt/none";
    cluster.preempt_mode = "OFF";
    cluster.partition.name = "debug";
    cluster.partition.preempt_mode = "OFF";
  }

  env_lookup env() const {
    return [this](const char* name) -> std::string {
      if (std::string(name) == "SLURM_SUBMIT_DIR") return dir.path();
      const auto it = environment.find(name);
      return it == environment.end() ? "" : it->second;
    };
  }

  batch_script read(const std::string& text, const std::vector<std::string>& cli = {}) {
    std::string why;
    const auto s = read_batch_script(text, "train.slurm", cli, env(), &why);
    EXPECT_TRUE(s.has_value()) << why;
    return s.value_or(batch_script{});
  }

  lint_result lint(const std::string& text, const std::vector<std::string>& cli = {}) {
    lint_context ctx;
    ctx.script = "train.slurm";
    ctx.cluster = cluster;
    ctx.measured = measured;
    ctx.env = env();
    return lint_script(read(text, cli), ctx);
  }

  // The findings as "LINE rule: text" lines, for a failure message.
  static std::string said(const lint_result& r) {
    std::string out;
    for (const lint_problem& p : r.problems) out += std::to_string(p.line) + " " + p.rule + ": " + p.text + "\n";
    return out;
  }

  // Exactly one finding, of `rule`, on `line`, its text containing `words`.
  static void expect_only(const lint_result& r, const std::string& rule, int line, const std::string& words) {
    ASSERT_EQ(r.problems.size(), 1u) << said(r);
    EXPECT_EQ(r.problems[0].rule, rule) << said(r);
    EXPECT_EQ(r.problems[0].line, line) << said(r);
    EXPECT_NE(r.problems[0].text.find(words), std::string::npos) << said(r);
    bool listed = false;
    for (const lint_rule& l : lint_rules()) listed = listed || l.name == rule;
    EXPECT_TRUE(listed) << rule << " is not in lint_rules()";
  }
};

// A clean script with the plugin's options; each rule's test changes one thing.
std::string plugin_script(const std::string& extra_sbatch = "", const std::string& options =
                                                                    "--graceful-exit=10 --kill-switch --save-switch "
                                                                    "--hang-timeout=8m") {
  return "#!/bin/bash\n"
         "#SBATCH --job-name=t\n"
         "#SBATCH --time=4:00:00\n"
         "#SBATCH " +
         options + "\n" + extra_sbatch +
         "set -euo pipefail\n"
         "srun python3 train.py\n";
}

TEST_F(LintTest, ReadsSbatchLinesUntilTheFirstLineOfCode) {
  const batch_script s = read(
      "#!/bin/bash\n"
      "#SBATCH --time=1:00:00   # EDIT\n"
      "##SBATCH --partition=gpu\n"
      "# a comment\n"
      "#SBATCH -J name -p batch\n"
      "#SBATCH --requeue\n"
      "echo hi\n"
      "#SBATCH --nodes=9\n",
      {"-t", "30"});
  ASSERT_NE(s.last("--time"), nullptr);
  EXPECT_EQ(s.last("--time")->value, "30");  // the command line wins, as sbatch's does
  EXPECT_EQ(s.last("--time")->line, 0);
  EXPECT_EQ(s.last("--job-name")->value, "name");
  EXPECT_EQ(s.last("--partition")->value, "batch");
  EXPECT_EQ(s.last("--partition")->line, 5);
  EXPECT_NE(s.last("--requeue"), nullptr);
  EXPECT_EQ(s.last("--nodes"), nullptr);  // after the first command: a comment to sbatch
}

TEST_F(LintTest, SbatchsInputVariablesComeBetweenTheScriptAndTheCommandLine) {
  environment["SBATCH_TIMELIMIT"] = "45";
  environment["SBATCH_NO_REQUEUE"] = "1";
  const std::string text = "#!/bin/bash\n#SBATCH --time=1:00:00\n#SBATCH --requeue\necho\n";
  EXPECT_EQ(read(text).last("--time")->value, "45");
  EXPECT_NE(read(text).last("--no-requeue"), nullptr);
  EXPECT_EQ(read(text, {"--time=2:00:00"}).last("--time")->value, "2:00:00");
}

TEST_F(LintTest, NotABatchScriptSaysWhy) {
  std::string why;
  EXPECT_FALSE(read_batch_script("import torch\n", "train.py", {}, env(), &why));
  EXPECT_NE(why.find("first line does not start with #!"), std::string::npos) << why;
  EXPECT_FALSE(read_batch_script("#!/bin/bash\n#SBATCH --time 1:00 -Z\n", "x", {}, env(), &why));
  EXPECT_NE(why.find("line 2"), std::string::npos) << why;
}

TEST_F(LintTest, ReadsTrainctlRunAndTheVariablesItsOptionsName) {
  const batch_script s = read(
      "#!/bin/bash\n"
      "LEAD=${LEAD:-10}\n"
      "if ! command -v trainctl-run >/dev/null; then exit 2; fi\n"
      "echo \"trainctl-run --graceful-exit=99 is a word in a string\"\n"
      "wrap=(trainctl-run --graceful-exit=\"$LEAD\" --kill-switch\n"
      "  --hang-timeout='20m' --)\n"
      "srun \"${wrap[@]}\" python3 train.py --ckpt-dir \"$SLURM_SUBMIT_DIR/ckpt\"\n"
      "cat <<EOF\n"
      "trainctl-run --graceful-exit=1 --\n"
      "EOF\n"
      "exec trainctl-run --batch --kill-switch -- \"$0\"\n");
  ASSERT_EQ(s.runs.size(), 2u);
  ASSERT_EQ(s.runs[0].size(), 3u);
  EXPECT_EQ(s.runs[0][0].name, "--graceful-exit");
  EXPECT_EQ(s.runs[0][0].value, "10");
  EXPECT_EQ(s.runs[0][0].line, 5);
  EXPECT_EQ(s.runs[0][2].value, "20m");
  EXPECT_EQ(s.runs[0][2].line, 6);
  EXPECT_FALSE(s.run_is_batch[0]);
  EXPECT_TRUE(s.run_is_batch[1]);
  EXPECT_EQ(s.checkpoint_lines, std::vector<int>{7});
  environment["LEAD"] = "25";
  EXPECT_EQ(read("#!/bin/bash\nLEAD=${LEAD:-10}\ntrainctl-run --graceful-exit=$LEAD -- x\n").runs[0][0].value, "25");
  const batch_script unknown = read("#!/bin/bash\ntrainctl-run --graceful-exit=\"$(cat lead)\" -- x\n");
  EXPECT_FALSE(unknown.runs[0][0].known);
}

TEST_F(LintTest, TheTemplatePassesClean) {
  std::ifstream in(TRAINCTL_TEMPLATE);
  std::stringstream text;
  text << in.rdbuf();
  ASSERT_FALSE(text.str().empty());
  const lint_result r = lint(text.str());
  EXPECT_TRUE(r.problems.empty()) << said(r);
  EXPECT_EQ(r.supervisor, "trainctl-run");
  EXPECT_TRUE(r.notes.empty()) << r.notes.front();
  // Clean too on a partition that preempts and requeues, with saves that fit.
  cluster.preempt_type = "preempt/partition_prio";
  cluster.partition.preempt_mode = "REQUEUE";
  cluster.partition.grace_s = 300;
  measured.longest_save_ms = 60000;
  measured.longest_start_ms = 120000;
  const lint_result preempting = lint(text.str());
  EXPECT_TRUE(preempting.problems.empty()) << said(preempting);
}

TEST_F(LintTest, ACleanScriptWithThePlugin) {
  const lint_result r = lint(plugin_script());
  EXPECT_TRUE(r.problems.empty()) << said(r);
  EXPECT_EQ(r.supervisor, "the SPANK plugin");
}

TEST_F(LintTest, Unsupervised) {
  expect_only(lint("#!/bin/bash\n#SBATCH --time=4:00:00\nsrun python3 train.py\n"), "unsupervised", 0,
              "runs without trainctl");
}

TEST_F(LintTest, NoGracefulExit) {
  expect_only(lint(plugin_script("", "--kill-switch --save-switch --hang-timeout=8m")), "no-graceful-exit", 4,
              "killed without a save");
}

TEST_F(LintTest, TwoNotices) {
  expect_only(lint(plugin_script("#SBATCH --signal=B:USR1@300\n")), "two-notices", 5, "--signal=B:USR1@300");
}

TEST_F(LintTest, LeadShorterThanTheSave) {
  measured.longest_save_ms = 40000;
  expect_only(lint(plugin_script("", "--graceful-exit=1 --kill-switch --hang-timeout=8m")), "lead-shorter-than-save", 4,
              "took 40s in an earlier run");
  // auto learns it: nothing to say.
  EXPECT_TRUE(lint(plugin_script("", "--graceful-exit=auto --kill-switch --hang-timeout=8m")).problems.empty());
}

TEST_F(LintTest, LimitTooShort) {
  measured.longest_start_ms = 5 * 60000;
  expect_only(lint(plugin_script(), {"--time=20"}), "limit-too-short", 0,
              "less than twice the graceful exit (10m) plus the start-up measured (5m)");
}

TEST_F(LintTest, PreemptCancels) {
  cluster.preempt_type = "preempt/partition_prio";
  cluster.partition.preempt_mode = "CANCEL";
  expect_only(lint(plugin_script()), "preempt-cancels", 0, "PreemptMode=CANCEL");
}

TEST_F(LintTest, PreemptWithoutRequeue) {
  cluster.preempt_type = "preempt/qos";
  cluster.partition.preempt_mode = "REQUEUE";
  cluster.partition.grace_s = 600;
  expect_only(lint(plugin_script("#SBATCH --no-requeue\n")), "preempt-no-requeue", 5, "cannot be requeued");
  expect_only(lint(plugin_script(), {"--no-requeue"}), "preempt-no-requeue", 0, "(--no-requeue)");
  cluster.job_requeue = false;
  expect_only(lint(plugin_script()), "preempt-no-requeue", 0, "JobRequeue=0");
  EXPECT_TRUE(lint(plugin_script("#SBATCH --requeue\n")).problems.empty());
}

TEST_F(LintTest, GraceTimeShorterThanTheSave) {
  cluster.preempt_type = "preempt/partition_prio";
  cluster.partition.preempt_mode = "REQUEUE";
  cluster.partition.grace_s = 30;
  measured.longest_save_ms = 120000;
  expect_only(lint(plugin_script("", "--graceful-exit=10 --kill-switch --hang-timeout=8m")), "grace-shorter-than-save",
              0, "GraceTime=30s");
}

TEST_F(LintTest, HangTimeoutAfterTheCollectivesTimeout) {
  expect_only(lint(plugin_script("#SBATCH --gpus-per-node=8\n", "--graceful-exit=10 --kill-switch --hang-timeout=30m")),
              "hang-after-collective-timeout", 4, "NCCL's timeout");
  expect_only(lint(plugin_script("", "--graceful-exit=10 --kill-switch --hang-timeout=30m")),
              "hang-after-collective-timeout", 4, "gloo's timeout");
  // auto, before anything is learnt, waits 30 minutes: past NCCL's.
  expect_only(lint(plugin_script("#SBATCH --gres=gpu:4\n", "--graceful-exit=10 --kill-switch --hang-timeout=auto")),
              "hang-after-collective-timeout", 4, "auto (30m)");
}

// The program's own init_process_group timeout, read from its text: the forms people
// write, a commented call and a timeout lint cannot read.
TEST(ProcessGroupTimeout, ReadFromTheProgramsText) {
  auto ms = [](const std::string& text) {
    const auto t = process_group_timeout(text);
    return t ? t->ms : -2;
  };
  EXPECT_EQ(ms("import torch.distributed as dist\ndist.init_process_group('nccl', timeout=timedelta(minutes=5))\n"),
            300000);
  const auto multi = process_group_timeout(
      "import datetime\n\n"
      "torch.distributed.init_process_group(\n"
      "    backend=\"gloo\",  # (see the docs)\n"
      "    timeout=datetime.timedelta(minutes=1, seconds=30.5),\n"
      ")\n");
  ASSERT_TRUE(multi.has_value());
  EXPECT_EQ(multi->ms, 90500);
  EXPECT_EQ(multi->line, 3) << "the call's line";
  EXPECT_EQ(ms("dist.init_process_group(backend)\n"), -2) << "no timeout: torch's default";
  EXPECT_EQ(ms("# dist.init_process_group(timeout=timedelta(seconds=1))\n"), -2) << "a comment";
  EXPECT_EQ(ms("my_init_process_group(timeout=timedelta(seconds=1))\n"), -2) << "another function";
  EXPECT_EQ(ms("dist.init_process_group(backend, timeout=td)\n"), -1) << "a variable: given, not readable";
  EXPECT_EQ(ms("dist.init_process_group(timeout=timedelta(minutes=5) * 2)\n"), -1) << "an expression";
  EXPECT_EQ(ms("dist.init_process_group(timeout=timedelta(seconds=int(os.environ['T'])))\n"), -1);
  EXPECT_EQ(ms("if gpu:\n  dist.init_process_group('nccl', timeout=timedelta(hours=1))\n"
               "else:\n  dist.init_process_group('gloo', timeout=timedelta(minutes=20))\n"),
            20 * 60000)
      << "the shortest: it ends the ranks first";
  EXPECT_EQ(ms("dist.init_process_group('gloo', timeout=timedelta(minutes=20), rank=int(\"0\"))\n"), 20 * 60000);
}

// lint reads the program the script runs: a hang timeout past the timeout its
// init_process_group gives is flagged with the program's line; one it cannot read is a
// note, not a finding against torch's default.
TEST_F(LintTest, HangTimeoutAfterTheProgramsOwnCollectiveTimeout) {
  dir.write("train.py",
            "import datetime\nimport torch.distributed as dist\n\n"
            "dist.init_process_group('gloo', timeout=datetime.timedelta(minutes=5))\n");
  const std::string script =
      "#!/bin/bash\n"
      "#SBATCH --time=4:00:00\n"
      "#SBATCH --graceful-exit=10 --kill-switch --hang-timeout=10m\n"
      "TRAIN=${TRAIN:-$SLURM_SUBMIT_DIR/train.py}\n"
      "echo \"running other.py\"\n"
      "launch=$(command -v torchrun)\n"
      "srun --kill-on-bad-exit=1 bash -c \"exec $launch $TRAIN --ckpt-dir $CKPT \\\n"
      "  --lr=3e-4\"\n";
  const batch_script s = read(script);
  ASSERT_EQ(s.programs.size(), 1u) << "the message's other.py is no program; the template's bash -c line is read";
  EXPECT_EQ(s.programs[0].second, dir / "train.py");
  lint_context ctx;
  ctx.script = "train.slurm";
  ctx.cluster = cluster;
  ctx.measured = measured;
  ctx.env = env();
  read_program_timeouts(s, dir.path(), &ctx);
  EXPECT_EQ(ctx.collective_timeout_ms, 5 * 60000);
  EXPECT_EQ(ctx.collective_timeout_from, dir / "train.py:4");
  expect_only(lint_script(s, ctx), "hang-after-collective-timeout", 3,
              "the timeout " + dir / "train.py:4" + " gives init_process_group, 5m");
  // A hang timeout inside it passes.
  dir.write("train.py",
            "import torch.distributed as dist\ndist.init_process_group('gloo', timeout=timedelta(hours=1))\n");
  lint_context longer = ctx;
  longer.collective_timeout_ms = 0;
  longer.collective_timeout_from.clear();
  read_program_timeouts(s, dir.path(), &longer);
  EXPECT_EQ(longer.collective_timeout_ms, 3600000);
  EXPECT_TRUE(lint_script(s, longer).problems.empty()) << said(lint_script(s, longer));
  // A timeout lint cannot read: a note, and no finding against gloo's default either.
  dir.write("train.py", "import torch.distributed as dist\ndist.init_process_group('gloo', timeout=TIMEOUT)\n");
  lint_context unread = ctx;
  unread.collective_timeout_ms = 0;
  unread.collective_timeout_from.clear();
  read_program_timeouts(s, dir.path(), &unread);
  EXPECT_EQ(unread.collective_timeout_unread, dir / "train.py:2");
  const lint_result r = lint_script(read("#!/bin/bash\n#SBATCH --time=4:00:00\n"
                                         "#SBATCH --graceful-exit=10 --kill-switch --hang-timeout=40m\n"
                                         "srun python3 train.py\n"),
                                    unread);
  EXPECT_TRUE(r.problems.empty()) << said(r);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("train.py:2 gives init_process_group a timeout lint cannot read"), std::string::npos)
      << r.notes[0];
}

TEST_F(LintTest, HangTimeoutShorterThanAStep) {
  measured.longest_quiet_ms = 12 * 60000;
  expect_only(lint(plugin_script("", "--graceful-exit=10 --kill-switch --hang-timeout=8m")), "hang-shorter-than-step",
              4, "between check() calls in an earlier run (12m)");
}

TEST_F(LintTest, PhaseTimeoutShorterThanThePhase) {
  measured.phases["eval"] = 3 * 60000;
  expect_only(lint(plugin_script("",
                                 "--graceful-exit=10 --kill-switch --hang-timeout=8m "
                                 "--hang-phase-timeout=eval=2m")),
              "hang-shorter-than-phase", 4, "eval=2m is shorter than the longest eval");
}

TEST_F(LintTest, SwitchDirectoryMissing) {
  expect_only(lint(plugin_script("", "--graceful-exit=10 --kill-switch=/nonexistent/team/stop --hang-timeout=8m")),
              "switch-dir-missing", 4, "/nonexistent/team");
}

TEST_F(LintTest, LogDirectoryMissing) {
  expect_only(lint(plugin_script("#SBATCH --output=logs/%x-%j.out\n")), "log-dir-missing", 5, dir / "logs");
}

TEST_F(LintTest, LogDirectoryOpenToEveryone) {
  dir.write("logs/keep", "");
  ASSERT_EQ(chmod((dir / "logs").c_str(), 0777), 0);
  expect_only(lint(plugin_script("#SBATCH --output=logs/%x-%j.out\n")), "log-dir-open", 5, "mode 0777");
  ASSERT_EQ(chmod((dir / "logs").c_str(), 01777), 0);  // sticky, as /tmp: others cannot replace your files
  EXPECT_TRUE(lint(plugin_script("#SBATCH --output=logs/%x-%j.out\n")).problems.empty());
  ASSERT_EQ(chmod((dir / "logs").c_str(), 02775), 0);  // a team's group directory
  EXPECT_TRUE(lint(plugin_script("#SBATCH --output=logs/%x-%j.out\n")).problems.empty());
}

TEST_F(LintTest, ArrayWithoutALimit) {
  const std::string script =
      "#!/bin/bash\n#SBATCH --time=4:00:00\n#SBATCH --array=1-10\n"
      "#SBATCH --graceful-exit=10 --kill-switch --hang-timeout=8m\n"
      "CKPT_DIR=$SLURM_SUBMIT_DIR/checkpoints\n"
      "srun python3 train.py --ckpt-dir \"$CKPT_DIR\"\n";
  expect_only(lint(script), "array-without-limit", 3, "line 5");
  EXPECT_TRUE(lint(script, {"--array=1-10%1"}).problems.empty());
  // Each task its own directory: no shared checkpoints.
  EXPECT_TRUE(lint("#!/bin/bash\n#SBATCH --time=4:00:00\n#SBATCH --array=1-10\n"
                   "#SBATCH --graceful-exit=10 --kill-switch --hang-timeout=8m\n"
                   "srun python3 train.py --ckpt-dir \"ckpt/$SLURM_ARRAY_TASK_ID\"\n")
                  .problems.empty());
  // Hugging Face's Trainer: its checkpoints are in --output_dir.
  expect_only(lint("#!/bin/bash\n#SBATCH --time=4:00:00\n#SBATCH --array=1-10\n"
                   "#SBATCH --graceful-exit=10 --kill-switch --hang-timeout=8m\n"
                   "srun python3 hf_train.py --output_dir runs/llm\n"),
              "array-without-limit", 3, "line 5");
}

TEST_F(LintTest, BadOptionValues) {
  expect_only(lint(plugin_script("", "--graceful-exit=10 --kill-switch --hang-timeout=5x")), "bad-option", 4,
              "--hang-timeout");
  expect_only(lint("#!/bin/bash\n#SBATCH --time=4:00:00\n"
                   "srun trainctl-run --graceful-exti=10 --kill-switch -- python3 train.py\n"),
              "bad-option", 3, "'--graceful-exti' is not an option of trainctl-run; did you mean --graceful-exit?");
}

TEST_F(LintTest, AValueLintCannotKnowIsANoteNotAFinding) {
  const lint_result r = lint(
      "#!/bin/bash\n#SBATCH --time=4:00:00\n"
      "srun trainctl-run --graceful-exit=\"$(cat lead)\" --kill-switch --hang-timeout=8m -- x\n");
  EXPECT_TRUE(r.problems.empty()) << said(r);
  ASSERT_EQ(r.notes.size(), 1u);
  EXPECT_NE(r.notes[0].find("--graceful-exit"), std::string::npos);
}

TEST_F(LintTest, EveryRuleHasANameAndWhatItChecks) {
  for (const lint_rule& l : lint_rules()) {
    EXPECT_GT(std::string(l.name).size(), 3u);
    EXPECT_GT(std::string(l.checks).size(), 20u) << l.name;
  }
}

}  // namespace
}  // namespace trainctl
