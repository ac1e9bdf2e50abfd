// trainctl-run's command line (and `trainctl run`'s): the supervisor by hand, for
// clusters without the SPANK plugin.
//   srun trainctl-run --graceful-exit=10 --kill-switch -- torchrun ... train.py
#include "run_cli.hpp"

#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli_text.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "options.hpp"
#include "parse.hpp"
#include "rank_signal.hpp"
#include "run_option_table.hpp"
#include "stack_dump.hpp"
#include "status_probe.hpp"
#include "supervised_step.hpp"
#include "supervisor.hpp"
#include "switch_paths.hpp"
#include "trainctl/trainctl.h"

namespace trainctl::commands {

namespace {

std::string prog = "trainctl-run";  // as the user called it: "trainctl-run" or "trainctl run"

// A wrapper's own errors exit 125, as timeout, env and nohup do: 126 and 127 stay the
// command's (found but not runnable, not found), and every other status is the
// command's own, so a training script's own exit 2 (argparse) is never taken for ours.
constexpr int kUsageStatus = 125;

[[noreturn]] void usage_error(const std::string& line) {
  std::fprintf(stderr, "%s: %s (see %s --help)\n", prog.c_str(), line.c_str(), prog.c_str());
  std::exit(kUsageStatus);
}

// What trainctl-run's command line says, as given: the table's options (run_option_table)
// with their text, validated by supervisor_options_from (one line and exit 125 on bad
// input), and the helpers the verbs start on the job's nodes.
struct run_args {
  std::vector<std::string> values;       // one per table row, as given
  std::vector<CLI::Option*> table_opts;  // one per table row: given when counted
  long adopt = 0;
  int run_id_fd = -1;
  std::vector<std::string> command;
  // The old one-shot flags (gone), and the helpers the verbs start on the job's nodes.
  std::string dump_job, dump_here, stacks_dir, mark_bad, status_here, status_every, signal_here;
  bool bad_nodes = false;
  std::string bad_expiry, bad_cap;
};

void add_run_options(CLI::App& app, run_args& a) {
  const std::vector<run_option>& table = run_option_table();
  a.values.resize(table.size());
  for (std::size_t i = 0; i < table.size(); ++i) {
    const run_option& r = table[i];
    std::string help = r.help;
    if (r.value_optional()) help += std::string("; given bare: $") + r.bare_var + " if set";
    const std::string shown = r.shown_default();
    if (!shown.empty()) help += " (default " + shown + ")";
    CLI::Option* o =
        r.metavar == nullptr ? app.add_flag(r.name)->description(help) : app.add_option(r.name, a.values[i], help);
    if (r.metavar != nullptr) o->type_name(r.metavar);
    if (r.value_optional()) o->expected(0, 1);
    if (r.hidden()) o->group("");
    a.table_opts.push_back(o);
  }
  // The old one-shot flags, gone into trainctl's verbs: hidden, each answering with the
  // verb that does it now (better than "did you mean" for a line in an old script).
  app.add_option("--dump-stacks", a.dump_job)->group("");
  app.add_flag("--bad-nodes", a.bad_nodes)->group("");
  app.add_option("--mark-bad-node", a.mark_bad)->group("");
  app.add_option("--bad-node-expiry", a.bad_expiry)->group("");
  app.add_option("--bad-node-cap", a.bad_cap)->group("");
  app.add_option("--dump-stacks-here", a.dump_here, "the part of --dump-stacks that runs on each node")->group("");
  app.add_option("--stacks-log-dir", a.stacks_dir, "with --dump-stacks-here: the log directory")->group("");
  app.add_option("--status-here", a.status_here, "the part of trainctl status that runs on each node")->group("");
  app.add_option("--status-every", a.status_every, "with --status-here: again at this interval")->group("");
  app.add_option("--signal-rank-here", a.signal_here, "the part of trainctl drill that runs on each node")->group("");
  app.add_option(kAdoptFlag, a.adopt, "supervise this existing child instead of starting COMMAND (SPANK plugin)")
      ->group("");
  app.add_option(kRunIdFdFlag, a.run_id_fd, "with --adopt: where the child waits for the run id (SPANK plugin)")
      ->group("");
  app.add_option("command", a.command, "the command to run")->expected(-1);
  app.positionals_at_end(true);
}

// The helpers (--status-here, --dump-stacks-here) and the old one-shot flags (gone): their exit
// status, or -1 when the command line asks for none of them.
int run_one_shot(const run_args& a) {
  if (!a.status_here.empty()) {
    std::chrono::milliseconds every{0};
    try {
      if (!a.status_every.empty()) every = parse_duration(a.status_every, 's');
    } catch (const parse_error& e) {
      usage_error(std::string("--status-every: ") + e.what());
    }
    return run_status_probe(a.status_here, every);
  }
  if (!a.dump_here.empty()) return dump_job_stacks_here(a.dump_here, a.stacks_dir, "on demand (trainctl stacks)");
  if (!a.signal_here.empty()) return signal_rank_here(a.signal_here);
  const auto gone = [&](const char* flag, const char* verb) {
    std::fprintf(stderr, "%s: %s is gone: `%s` does it now\n", prog.c_str(), flag, verb);
    return kUsageStatus;
  };
  if (!a.dump_job.empty()) return gone("--dump-stacks", "trainctl stacks JOB");
  if (a.bad_nodes) return gone("--bad-nodes", "trainctl bad-nodes");
  if (!a.mark_bad.empty()) return gone("--mark-bad-node", "trainctl bad-nodes mark NODE REASON");
  if (!a.bad_expiry.empty()) return gone("--bad-node-expiry", "trainctl bad-nodes --expiry");
  if (!a.bad_cap.empty()) return gone("--bad-node-cap", "trainctl bad-nodes --cap");

  return -1;
}

supervisor_options options_of(const run_args& a) {
  const std::vector<run_option>& table = run_option_table();
  std::vector<given_option> given;
  for (std::size_t i = 0; i < table.size(); ++i)
    if (a.table_opts[i]->count() > 0) given.push_back({&table[i], a.values[i]});
  supervisor_options o;
  try {
    o = supervisor_options_from(given, env_text);
  } catch (const parse_error& e) {
    usage_error(e.what());
  }
  // From the job's environment (the plugin's path too): a typo there must not stop the
  // job, which may already run; it gets one line and the default.
  if (!is_given(given, "--no-progress-runs") && !env_text(env_var::kTrainctlNoProgressRuns).empty()) {
    try {
      o.no_progress_runs = option::parse_no_progress_runs(env_text(env_var::kTrainctlNoProgressRuns));
    } catch (const parse_error&) {
      std::fprintf(stderr, "%s: TRAINCTL_NO_PROGRESS_RUNS='%s' is not a count of runs from 0 (off) to 1000: using %d\n",
                   prog.c_str(), env_text(env_var::kTrainctlNoProgressRuns).c_str(), option::kNoProgressRunsDefault);
    }
  }
  o.job_id = env_text(env_var::kSlurmJobId);
  const std::string task = env_text(env_var::kSlurmProcid);
  o.log_prefix =
      "trainctl-run" + (env_text(env_var::kSlurmdNodename).empty()
                            ? std::string()
                            : "[" + env_text(env_var::kSlurmdNodename) + (task.empty() ? "" : " task " + task) + "]");
  return o;
}

// In a job step that already runs under a supervisor (the plugin's, or the batch
// script's own trainctl-run), the command runs as it is, under that one's options: a
// second supervisor would relay every notice twice. Returns only when this call is the
// step's supervisor.
void pass_on_if_supervised(std::vector<std::string>& command) {
  const auto env = [](const char* name) { return env_text(name); };
  switch (nesting_of(env)) {
    case nesting::supervise:
      return;
    case nesting::loop:
      std::fprintf(stderr,
                   "%s: this job step already runs under trainctl-run, which ran a command that started it again, "
                   "and this is the second time: a batch script whose first line execs trainctl-run needs the guard "
                   "in front of it, or it starts itself forever:\n"
                   "  [ \"${TRAINCTL_SUPERVISED:-}\" = \"$SLURM_JOB_ID\" ] || exec trainctl-run --batch -- \"$0\" "
                   "\"$@\"\n",
                   prog.c_str());
      std::exit(kUsageStatus);
    case nesting::pass_on:
      break;
  }
  const std::string supervisor = env_text(env_var::kTrainctlSupervisorPid);
  std::fprintf(stderr,
               "%s: this job step already runs under trainctl-run%s: %s runs as it is, under that one's options\n",
               prog.c_str(), supervisor.empty() ? "" : (" (pid " + supervisor + ")").c_str(), command[0].c_str());
  setenv(kPassedOnVar, supervised_step(env).c_str(), 1);
  std::vector<char*> args;
  args.reserve(command.size() + 1);
  for (auto& word : command) args.push_back(&word[0]);
  args.push_back(nullptr);
  execvp(args[0], args.data());
  const int err = errno;
  std::fprintf(stderr, "%s: cannot run %s: %s\n", prog.c_str(), args[0], std::strerror(err));
  std::exit(err == ENOENT ? 127 : 126);
}

}  // namespace

int run(const std::string& program, int argc, char** argv) {
  using namespace trainctl;
  prog = program;
  CLI::App app{
      "Runs COMMAND (a launcher such as torchrun, or the training program itself) so that SLURM's "
      "time-limit and preemption notices reach the rank processes without killing the launcher, the "
      "kill and save switches are watched once per node, and COMMAND's exit status is passed on.",
      program};
  app.set_version_flag("--version", program + " " + std::to_string(TRAINCTL_VERSION_MAJOR) + "." +
                                        std::to_string(TRAINCTL_VERSION_MINOR) + "." +
                                        std::to_string(TRAINCTL_VERSION_PATCH));
  run_args a;
  add_run_options(app, a);
  name_values(app);
  if (g_describe != nullptr) {  // `trainctl completion`: the parser, not a command line
    *g_describe = describe_app(app, "run");
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    usage_error(refusal(app, e.what(), argc, argv));
  }

  if (const int status = run_one_shot(a); status >= 0) return status;
  const supervisor_options o = options_of(a);
  if (a.adopt <= 0 && a.command.empty()) usage_error("no command given; usage: " + prog + " [options] -- COMMAND...");
  if (a.adopt <= 0) pass_on_if_supervised(a.command);

  std::vector<char*> args;
  args.reserve(a.command.size() + 1);
  for (auto& word : a.command) args.push_back(&word[0]);
  args.push_back(nullptr);
  exit_like(
      run_supervised(o, args.data(), static_cast<pid_t>(a.adopt), a.adopt > 0 && a.run_id_fd > 2 ? a.run_id_fd : -1));
  return 1;  // not reached: exit_like exits
}

}  // namespace trainctl::commands
