#include "lint_rules.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <set>

#include "did_you_mean.hpp"
#include "env_names.hpp"
#include "hang_budget.hpp"
#include "options.hpp"
#include "parse.hpp"
#include "run_option_table.hpp"
#include "save_times.hpp"
#include "slurm_job.hpp"
#include "switch_paths.hpp"

namespace trainctl {
namespace {

using std::chrono::milliseconds;

// torch's timeouts of a collective when init_process_group names none.
constexpr milliseconds kNcclTimeout = std::chrono::minutes(10);
constexpr milliseconds kGlooTimeout = std::chrono::minutes(30);

std::string dur(std::int64_t ms) { return format_duration(milliseconds(ms)); }

// What the rules share, worked out once from the script and its context.
struct view {
  const batch_script& s;
  const lint_context& ctx;
  supervisor_options o;
  bool supervised = false;
  std::map<std::string, int> line_of;  // each trainctl option given: its line
  std::set<std::string> unknown;       // trainctl options whose value lint cannot tell
  bool misspelt = false;               // an option trainctl-run does not have (maybe the one missing)
  std::int64_t limit_s = -1;           // the time limit; -1 unknown or none
  int limit_line = 0;
  milliseconds lead{0};  // the graceful exit, auto worked out from the saves measured

  int line(const std::string& name) const {
    const auto it = line_of.find(name);
    return it == line_of.end() ? 0 : it->second;
  }
  bool sure(const std::string& name) const { return unknown.count(name) == 0; }
};

void add(lint_result* r, const char* rule, int line, std::string text) {
  r->problems.push_back({rule, line, std::move(text)});
}

view make_view(const batch_script& s, const lint_context& ctx, lint_result* r) {
  view v{s, ctx};
  const script_supervision sup = supervision_of(s, ctx.env);
  r->supervisor = sup.supervisor;
  v.supervised = !sup.supervisor.empty();
  v.o = sup.options;
  v.line_of = sup.line_of;
  v.unknown = sup.unknown;
  v.misspelt = sup.misspelt;
  for (const auto& [line, what] : sup.errors) add(r, "bad-option", line, what);
  for (const std::string& name : sup.unknown)
    if (sup.line_of.count(name) != 0 &&
        std::none_of(sup.errors.begin(), sup.errors.end(), [&](const auto& e) { return e.second.rfind(name, 0) == 0; }))
      r->notes.push_back(name +
                         "'s value depends on what lint cannot know (a command, or a variable neither the script nor "
                         "this environment sets): the rules on it are skipped");
  if (const script_option* t = s.last("--time")) {
    v.limit_line = t->line;
    try {
      v.limit_s = parse_slurm_duration(t->value);
    } catch (const parse_error&) {
      add(r, "bad-option", t->line,
          "--time=" + t->value.substr(0, 40) +
              ": not a SLURM time; accepted: MINUTES, HH:MM:SS, D-HH:MM (sbatch refuses it)");
    }
  } else if (ctx.cluster) {
    v.limit_s = ctx.cluster->partition.default_time_s >= 0 ? ctx.cluster->partition.default_time_s
                                                           : ctx.cluster->partition.max_time_s;
  }
  v.lead = v.o.graceful_exit == option::kGracefulExitAuto
               ? auto_graceful_exit(ctx.measured.longest_save_ms, std::max<std::int64_t>(0, v.limit_s)).graceful
               : v.o.graceful_exit;
  return v;
}

// -- the rules ---------------------------------------------------------------------------

void unsupervised(const view& v, lint_result* r) {
  if (!v.supervised) {
    add(r, "unsupervised", 0,
        "it runs without trainctl: no trainctl option in its #SBATCH lines (the SPANK plugin) and no trainctl-run in "
        "it, so a time limit or preemption kills the ranks without a save; add '#SBATCH --graceful-exit=10 "
        "--kill-switch --save-switch' where the plugin is installed, else run the step under 'trainctl-run "
        "--graceful-exit=10 --kill-switch --save-switch --'");
    return;
  }
  if (v.o.graceful_exit.count() == 0 && v.sure("--graceful-exit") && !v.misspelt)
    add(r, "no-graceful-exit", v.line("--kill-switch"),
        "trainctl runs it without --graceful-exit: at the time limit the ranks are killed without a save; add "
        "--graceful-exit=10 (minutes before the end) or --graceful-exit=auto");
}

void two_notices(const view& v, lint_result* r) {
  const script_option* sig = v.s.last("--signal");
  if (sig == nullptr || !v.supervised || v.o.graceful_exit.count() == 0) return;
  add(r, "two-notices", sig->line,
      "--signal=" + sig->value.substr(0, 40) +
          " sends a second notice besides --graceful-exit: the ranks get two signals at two moments and may save "
          "twice or exit at different steps; remove --signal (trainctl's notice reaches every rank at one step)");
}

void lead_vs_save(const view& v, lint_result* r) {
  const std::int64_t save = v.ctx.measured.longest_save_ms;
  if (save <= 0 || v.o.graceful_exit.count() <= 0 || !v.sure("--graceful-exit")) return;
  const std::int64_t quiet = v.ctx.measured.longest_quiet_ms;
  const std::int64_t need = lead_needed_ms(save, quiet);
  if (v.o.graceful_exit.count() >= need) return;
  add(r, "lead-shorter-than-save", v.line("--graceful-exit"),
      "--graceful-exit=" + format_duration(v.o.graceful_exit) + " is too short for this job's saves: the longest " +
          "took " + dur(save) + " in an earlier run, so a save at the deadline could be cut; use --graceful-exit=" +
          dur((need + 999) / 1000 * 1000) + " (the save x" + std::to_string(kAutoSaveFactor).substr(0, 3) +
          (quiet > 0 ? " + the longest step, " + dur(quiet) : std::string()) + " + " + format_duration(kLeadMargin) +
          "), or auto");
}

void limit_vs_lead(const view& v, lint_result* r) {
  if (v.limit_s <= 0 || v.lead.count() <= 0 || !v.sure("--graceful-exit")) return;
  const std::int64_t start = v.ctx.measured.longest_start_ms;
  const std::int64_t need_ms = 2 * v.lead.count() + start;
  if (v.limit_s * 1000 >= need_ms) return;
  const std::string whence =
      v.limit_line > 0 || v.s.last("--time") != nullptr ? "--time" : "the partition's default time";
  add(r, "limit-too-short", v.limit_line,
      whence + " (" + dur(v.limit_s * 1000) + ") is less than twice the graceful exit (" + format_duration(v.lead) +
          ")" + (start > 0 ? " plus the start-up measured (" + dur(start) + ")" : std::string()) +
          ": each task spends more time starting and saving than training; use --time of at least " + dur(need_ms) +
          ", or a shorter --graceful-exit");
}

void preemption(const view& v, lint_result* r) {
  if (!v.ctx.cluster || !v.ctx.cluster->preempts()) return;
  const partition_facts& p = v.ctx.cluster->partition;
  const std::string mode = p.preempt_mode.empty() ? v.ctx.cluster->preempt_mode : p.preempt_mode;
  const int line = v.s.last("--partition") != nullptr ? v.s.last("--partition")->line : 0;
  bool requeue = v.ctx.cluster->job_requeue;
  const script_option* said = nullptr;  // the job's own --requeue or --no-requeue, the last given
  for (const script_option& o : v.s.sbatch)
    if (o.name == "--requeue" || o.name == "--no-requeue") {
      requeue = o.name == "--requeue";
      said = &o;
    }
  if (mode.find("CANCEL") != std::string::npos)
    add(r, "preempt-cancels", line,
        "partition " + p.name +
            " preempts with PreemptMode=CANCEL: a preempted task is cancelled, never "
            "requeued, and resumes only when a next array task starts; submit as an array (--array=1-N%1) or to a "
            "partition that requeues");
  if (mode.find("REQUEUE") != std::string::npos && !requeue)
    add(r, "preempt-no-requeue", said != nullptr ? said->line : line,
        "partition " + p.name + " preempts with PreemptMode=REQUEUE but this job cannot be requeued (" +
            (said != nullptr ? std::string("--no-requeue") : "the cluster's JobRequeue=0") +
            "): a preemption ends it for good; add #SBATCH --requeue");
  const bool kills = mode.find("CANCEL") != std::string::npos || mode.find("REQUEUE") != std::string::npos;
  const std::int64_t save = v.ctx.measured.longest_save_ms;
  if (kills && v.supervised && save > 0 && p.grace_s * 1000 < save)
    add(r, "grace-shorter-than-save", line,
        "partition " + p.name + " gives a preempted job GraceTime=" + std::to_string(p.grace_s) +
            "s between the notice and SIGKILL, but this job's longest save took " + dur(save) +
            ": a preemption's save would be cut; save more often (touch the save switch, or save every N steps) "
            "or ask the admins for a GraceTime of at least " +
            dur(save * 3 / 2));
}

// Whose timeout a collective has: the user's (--collective-timeout), the program's own
// init_process_group, else torch's default for the backend.
std::pair<milliseconds, std::string> collective_timeout(const view& v) {
  if (v.ctx.collective_timeout_ms > 0) {
    const std::string whose = v.ctx.collective_timeout_from.empty()
                                  ? "the collectives' timeout you gave (--collective-timeout)"
                                  : "the timeout " + v.ctx.collective_timeout_from + " gives init_process_group";
    return {milliseconds(v.ctx.collective_timeout_ms), whose};
  }
  bool gpus = false;
  for (const script_option& o : v.s.sbatch)
    gpus = gpus || o.name.rfind("--gpus", 0) == 0 || (o.name == "--gres" && o.value.find("gpu") != std::string::npos);
  if (gpus) return {kNcclTimeout, "NCCL's timeout (torch's default for a job with GPUs)"};
  return {kGlooTimeout, "gloo's timeout (torch's default on CPUs)"};
}

void hang_vs_collectives(const view& v, lint_result* r) {
  if (v.o.hang.timeout.count() == 0 || !v.sure("--hang-timeout")) return;
  if (v.ctx.collective_timeout_ms <= 0 && !v.ctx.collective_timeout_unread.empty()) {
    r->notes.push_back(v.ctx.collective_timeout_unread +
                       " gives init_process_group a timeout lint cannot read: the hang timeout is not checked "
                       "against it (give it with --collective-timeout)");
    return;
  }
  hang_rules rules;
  rules.timeout = v.o.hang.timeout;
  const milliseconds hang = budget_for(rules, "", v.ctx.measured.longest_quiet_ms).budget;
  const auto [collective, whose] = collective_timeout(v);
  if (hang < collective) return;
  const bool programs = !v.ctx.collective_timeout_from.empty();
  add(r, "hang-after-collective-timeout", v.line("--hang-timeout"),
      "--hang-timeout=" +
          (v.o.hang.timeout == option::kHangTimeoutAuto ? "auto (" + format_duration(hang) + ")"
                                                        : format_duration(hang)) +
          " is not shorter than " + whose + ", " + format_duration(collective) +
          ": torch ends the ranks of a hung collective before trainctl takes their stacks; use --hang-timeout=" +
          format_duration(collective * 4 / 5) +
          (programs                          ? ", or a longer timeout in init_process_group"
           : v.ctx.collective_timeout_ms > 0 ? std::string()
                                             : ", or give lint the timeout your init_process_group sets with "
                                               "--collective-timeout"));
}

void hang_vs_phases(const view& v, lint_result* r) {
  if (v.o.hang.timeout.count() <= 0 || !v.sure("--hang-timeout")) return;
  const std::int64_t quiet = v.ctx.measured.longest_quiet_ms;
  if (quiet > v.o.hang.timeout.count())
    add(r, "hang-shorter-than-step", v.line("--hang-timeout"),
        "--hang-timeout=" + format_duration(v.o.hang.timeout) +
            " is shorter than the longest a training rank went "
            "between check() calls in an earlier run (" +
            dur(quiet) + "): that would count as a hang; use at least " + dur(quiet * 2) +
            ", --hang-timeout=auto, or mark the long part as a phase (ctl.phase(\"eval\"))");
  std::map<std::string, std::int64_t> measured = v.ctx.measured.phases;
  measured["save"] = v.ctx.measured.longest_save_ms;
  for (const auto& [name, budget] : v.o.hang.phase_timeouts) {
    const auto it = measured.find(name);
    if (it == measured.end() || it->second <= budget.count()) continue;
    add(r, "hang-shorter-than-phase", v.line("--hang-phase-timeout"),
        "--hang-phase-timeout " + name + "=" + format_duration(budget) + " is shorter than the longest " + name +
            " of an earlier run (" + dur(it->second) + "): that " + name + " would count as a hang; use " + name + "=" +
            dur(it->second * 3) + ", or leave it out to learn it (3 x the longest)");
  }
}

// `path` relative to the submit directory, as the job resolves it.
std::string in_submit_dir(const view& v, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  const std::string dir = v.ctx.env(env_var::kSlurmSubmitDir);
  return (dir.empty() ? "." : dir) + "/" + path;
}

void switch_dirs(const view& v, lint_result* r) {
  const std::pair<const char*, std::string> switches[] = {{"--kill-switch", v.o.kill_switch},
                                                          {"--save-switch", v.o.save_switch}};
  for (const auto& [name, path] : switches) {
    if (path.empty() || !v.sure(name) || path.find('%') != std::string::npos) continue;
    const std::string dir = dir_of(in_submit_dir(v, path));
    struct stat st {};
    if (stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
    add(r, "switch-dir-missing", v.line(name),
        std::string(name) + "'s file " + path + " is in " + dir +
            ", which is not a directory here: nobody could touch the switch; create the directory or name another "
            "path");
  }
}

void log_dirs(const view& v, lint_result* r) {
  std::vector<std::pair<std::string, int>> dirs;  // a directory and the line naming it
  for (const char* name : {"--output", "--error"})
    if (const script_option* o = v.s.last(name)) {
      const size_t slash = o->value.rfind('/');
      if (slash != std::string::npos && o->value.find('%') < slash) continue;  // %x/...: a directory per job
      dirs.emplace_back(slash == std::string::npos ? "." : dir_of(o->value), o->line);
    }
  if (v.s.last("--output") == nullptr) dirs.emplace_back(".", 0);  // slurm-%j.out in the submit directory
  if (!v.o.log_dir.empty() && v.sure("--log-dir")) dirs.emplace_back(v.o.log_dir, v.line("--log-dir"));
  std::set<std::string> seen;
  for (const auto& [rel, line] : dirs) {
    const std::string dir = in_submit_dir(v, rel);
    if (!seen.insert(dir).second) continue;
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      add(r, "log-dir-missing", line,
          "the log directory " + dir +
              " does not exist: SLURM does not create it, and the job fails without a "
              "log; create it before sbatch (mkdir -p)");
      continue;
    }
    if ((st.st_mode & S_IWOTH) != 0 && (st.st_mode & S_ISVTX) == 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      add(r, "log-dir-open", line,
          "the log directory " + dir + " is writable by every user without the sticky bit (mode " + mode +
              "): anyone can replace your logs and the stacks trainctl writes there; chmod o-w " + dir +
              " (a team shares it through its group: chgrp TEAM, chmod g+ws)");
    }
  }
}

void array_limit(const view& v, lint_result* r) {
  const script_option* array = v.s.last("--array");
  if (array == nullptr || array->value.find('%') != std::string::npos || !v.supervised) return;
  if (v.s.checkpoint_lines.empty() || v.s.checkpoint_per_task) return;
  add(r, "array-without-limit", array->line,
      "--array=" + array->value.substr(0, 40) + " has no %N limit, so its tasks can run at once, while each resumes " +
          "from the same checkpoint directory (line " + std::to_string(v.s.checkpoint_lines.front()) +
          "): they would overwrite each other's saves; use --array=" + array->value.substr(0, 40) +
          "%1 to run them one after another");
}

}  // namespace

const std::vector<lint_rule>& lint_rules() {
  static const std::vector<lint_rule> rules = {
      {"bad-option", "each trainctl option's value is one the supervisor accepts (else the job fails at its start)"},
      {"unsupervised", "the script runs under trainctl: the plugin's options in #SBATCH lines, or trainctl-run"},
      {"no-graceful-exit", "trainctl has a --graceful-exit, so a time limit ends the run with a save"},
      {"two-notices", "no --signal besides --graceful-exit: one notice, at one step"},
      {"lead-shorter-than-save",
       "the graceful exit is at least the longest save measured x1.5, plus the longest step and 10s"},
      {"limit-too-short", "the time limit is at least twice the graceful exit plus the longest start-up measured"},
      {"preempt-cancels", "the partition does not preempt with PreemptMode=CANCEL"},
      {"preempt-no-requeue", "where the partition preempts with REQUEUE, the job can be requeued"},
      {"grace-shorter-than-save", "where the partition preempts, its GraceTime fits the longest save measured"},
      {"hang-after-collective-timeout",
       "the hang timeout is shorter than the collectives' own: the timeout the program's init_process_group "
       "gives, --collective-timeout, else NCCL's 10m with GPUs, gloo's 30m"},
      {"hang-shorter-than-step", "the hang timeout is longer than the longest time between check() calls measured"},
      {"hang-shorter-than-phase", "each --hang-phase-timeout is longer than that phase's longest measured"},
      {"switch-dir-missing", "the kill and save switches' directory exists"},
      {"log-dir-missing", "the log directories (--output, --error, --log-dir) exist"},
      {"log-dir-open", "no log directory is writable by every user without the sticky bit"},
      {"array-without-limit", "an array whose tasks resume from one checkpoint directory has a %N limit"},
  };
  return rules;
}

lint_result lint_script(const batch_script& s, const lint_context& ctx) {
  lint_result r;
  const view v = make_view(s, ctx, &r);
  for (auto check : {unsupervised, two_notices, lead_vs_save, limit_vs_lead, preemption, hang_vs_collectives,
                     hang_vs_phases, switch_dirs, log_dirs, array_limit})
    check(v, &r);
  std::stable_sort(r.problems.begin(), r.problems.end(),
                   [](const lint_problem& a, const lint_problem& b) { return a.line < b.line; });
  return r;
}

}  // namespace trainctl
