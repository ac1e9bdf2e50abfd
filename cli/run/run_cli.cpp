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
#include "commands.hpp"
#include "env.hpp"
#include "job_access.hpp"
#include "job_status.hpp"
#include "options.hpp"
#include "parse.hpp"
#include "stack_dump.hpp"
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

// What trainctl-run's command line says, as given: validated into supervisor_options by
// supervisor_options_from (one line and exit 125 on bad input).
struct run_args {
  std::string graceful, deadline, kill_switch, save_switch, launchers, state, shield, on_notice;
  std::string on_notice_timeout = format_duration(option::kOnNoticeTimeoutDefault);
  std::string hang_timeout = "off", hang_start_timeout, hang_phase_timeout, hang_action = "alert", log_dir;
  std::string no_progress_runs;
  std::string signal_text = signal_name(option::kGracefulSignalDefault);
  std::string poll = format_duration(option::kPollIntervalDefault);
  std::string endtime_poll = format_duration(option::kEndtimePollDefault);
  bool no_shield = false, batch = false;
  long adopt = 0;
  std::vector<std::string> command;
  CLI::Option* ks = nullptr;  // --kill-switch and --save-switch: given bare, or not at all
  CLI::Option* ss = nullptr;
  CLI::Option* npr = nullptr;
  // The old one-shot flags (gone), and the helpers the verbs start on the job's nodes.
  std::string dump_job, dump_here, stacks_dir, mark_bad, status_here, status_every;
  bool bad_nodes = false;
  std::string bad_expiry, bad_cap;
};

void add_run_options(CLI::App& app, run_args& a) {
  app.add_option(option::kGracefulExit.name, a.graceful, option::kGracefulExit.help);
  app.add_option("--deadline", a.deadline, "ask the ranks to exit at this unix time (seconds)");
  a.ks = app.add_option(option::kKillSwitch.name, a.kill_switch,
                        std::string(option::kKillSwitch.help) + "; given bare: $KILL_SWITCH if set")
             ->expected(0, 1);
  a.ss = app.add_option(option::kSaveSwitch.name, a.save_switch,
                        std::string(option::kSaveSwitch.help) + "; given bare: $SAVE_SWITCH if set")
             ->expected(0, 1);
  app.add_option(option::kGracefulSignal.name, a.signal_text,
                 std::string(option::kGracefulSignal.help) + " (default " + a.signal_text + ")");
  app.add_option("--shield", a.shield,
                 "signals the command ignores so they cannot kill a launcher (default TERM,USR1 "
                 "and the graceful signal)");
  app.add_flag(option::kNoShield.name, a.no_shield, option::kNoShield.help);
  app.add_option(option::kPollInterval.name, a.poll,
                 std::string(option::kPollInterval.help) + " (default " + a.poll + ")");
  app.add_option(option::kEndtimePoll.name, a.endtime_poll,
                 std::string(option::kEndtimePoll.help) + " (default " + a.endtime_poll + ")");
  app.add_option(option::kLaunchers.name, a.launchers, option::kLaunchers.help);
  app.add_flag(option::kBatch.name, a.batch, option::kBatch.help);
  app.add_option(option::kOnNotice.name, a.on_notice, option::kOnNotice.help);
  app.add_option(option::kOnNoticeTimeout.name, a.on_notice_timeout,
                 std::string(option::kOnNoticeTimeout.help) + " (default " + a.on_notice_timeout + ")");
  app.add_option(option::kHangTimeout.name, a.hang_timeout, option::kHangTimeout.help);
  app.add_option(option::kHangPhaseTimeout.name, a.hang_phase_timeout, option::kHangPhaseTimeout.help);
  app.add_option(option::kHangStartTimeout.name, a.hang_start_timeout, option::kHangStartTimeout.help);
  app.add_option(option::kHangAction.name, a.hang_action, std::string(option::kHangAction.help) + " (default alert)");
  app.add_option(option::kLogDir.name, a.log_dir, option::kLogDir.help);
  a.npr = app.add_option(option::kNoProgressRuns.name, a.no_progress_runs, option::kNoProgressRuns.help);
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
  app.add_option(option::kAdopt.name, a.adopt, option::kAdopt.help)->group("");
  app.add_option("--state", a.state, "node state file (default: per job step and node)")->group("");
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

supervisor_options supervisor_options_from(const run_args& a) {
  supervisor_options o;
  try {
    if (!a.graceful.empty()) o.graceful_exit = option::parse_graceful_exit(a.graceful);
  } catch (const parse_error& e) {
    usage_error(std::string("--graceful-exit: ") + e.what());
  }
  try {
    if (!a.deadline.empty()) o.deadline = parse_unix_time(a.deadline);
  } catch (const parse_error& e) {
    usage_error(std::string("--deadline: ") + e.what());
  }
  try {
    o.graceful_signal = option::parse_notice_signal(a.signal_text);
  } catch (const parse_error& e) {
    usage_error(std::string("--graceful-signal: ") + e.what());
  }
  try {
    if (!a.no_shield) {
      o.shield = a.shield.empty() ? option::default_shield() : option::parse_notice_signal_list(a.shield);
      if (std::find(o.shield.begin(), o.shield.end(), o.graceful_signal) == o.shield.end())
        o.shield.push_back(o.graceful_signal);
    } else {
      o.shield.clear();
    }
  } catch (const parse_error& e) {
    usage_error(std::string("--shield: ") + e.what());
  }
  try {
    o.poll_interval = option::parse_poll_interval(a.poll);
  } catch (const parse_error& e) {
    usage_error(std::string("--poll-interval: ") + e.what());
  }
  try {
    o.endtime_poll = option::parse_endtime_poll(a.endtime_poll);
  } catch (const parse_error& e) {
    usage_error(std::string("--endtime-poll: ") + e.what());
  }
  try {
    o.hang_timeout = option::parse_hang_timeout(a.hang_timeout);
    if (!a.hang_start_timeout.empty()) {
      try {
        o.hang_start_timeout = option::parse_hang_timeout(a.hang_start_timeout);
        if (o.hang_start_timeout == option::kHangTimeoutAuto)
          throw parse_error(std::string(option::kHangTimeout.name) +
                            ": 'auto' is for --hang-timeout only; accepted: a duration such as 20m, or off");
      } catch (const parse_error& e) {
        const std::string what = e.what();  // names --hang-timeout, whose rules it shares
        throw parse_error(std::string(option::kHangStartTimeout.name) +
                          what.substr(std::strlen(option::kHangTimeout.name)));
      }
    } else if (o.hang_timeout == option::kHangTimeoutAuto) {
      o.hang_start_timeout = std::chrono::minutes(30);  // nothing to learn a start from: auto's first-time budget
    } else if (o.hang_timeout.count() > 0) {
      o.hang_start_timeout = std::max(3 * o.hang_timeout, std::chrono::milliseconds(std::chrono::minutes(10)));
    }
    if (!a.hang_phase_timeout.empty()) {
      for (const auto& [phase, budget] : option::parse_hang_phase_timeout(a.hang_phase_timeout))
        o.hang_phase_timeouts[phase] = budget;
      if (o.hang_timeout.count() == 0)
        throw parse_error(std::string(option::kHangPhaseTimeout.name) +
                          " needs --hang-timeout (a duration or auto): without it no hang is looked for");
    }
    o.on_hang = static_cast<trainctl::hang_action>(option::parse_hang_action(a.hang_action));
    o.log_dir = a.log_dir;
    o.on_notice_timeout = option::parse_on_notice_timeout(a.on_notice_timeout);
    o.on_notice = option::check_on_notice(a.on_notice);
    if (a.npr->count() > 0) o.no_progress_runs = option::parse_no_progress_runs(a.no_progress_runs);
  } catch (const parse_error& e) {
    usage_error(e.what());
  }
  for (std::string_view name : split(a.launchers, ','))
    if (!name.empty()) o.launchers.emplace_back(name);
  const std::string submit = env("SLURM_SUBMIT_DIR"), job_name = env("SLURM_JOB_NAME");
  // Given with a path: that path. Given bare: $KILL_SWITCH (or $SAVE_SWITCH), else the
  // default. Not given: whatever the environment says, possibly nothing.
  auto resolve = [&](const CLI::Option* opt, const std::string& value, const char* var, const char* kind) {
    if (opt->count() == 0) return env(var);
    if (!value.empty()) return value;
    return !env(var).empty() ? env(var) : default_switch_path(kind, submit, job_name);
  };
  o.kill_switch = resolve(a.ks, a.kill_switch, "KILL_SWITCH", "kill-switch");
  o.save_switch = resolve(a.ss, a.save_switch, "SAVE_SWITCH", "save-switch");
  // From the job's environment (the plugin's path too): a typo there must not stop the
  // job, which may already run; it gets one line and the default.
  if (a.npr->count() == 0 && !env("TRAINCTL_NO_PROGRESS_RUNS").empty()) {
    try {
      o.no_progress_runs = option::parse_no_progress_runs(env("TRAINCTL_NO_PROGRESS_RUNS"));
    } catch (const parse_error&) {
      std::fprintf(stderr, "%s: TRAINCTL_NO_PROGRESS_RUNS='%s' is not a count of runs from 0 (off) to 1000: using %d\n",
                   prog.c_str(), env("TRAINCTL_NO_PROGRESS_RUNS").c_str(), option::kNoProgressRunsDefault);
    }
  }
  o.batch = a.batch;
  o.job_id = env("SLURM_JOB_ID");
  o.state_path = a.state;
  const std::string task = env("SLURM_PROCID");
  o.log_prefix = "trainctl-run" + (env("SLURMD_NODENAME").empty()
                                       ? std::string()
                                       : "[" + env("SLURMD_NODENAME") + (task.empty() ? "" : " task " + task) + "]");
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
  const std::string supervisor = env_text("TRAINCTL_SUPERVISOR_PID");
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
  const supervisor_options o = supervisor_options_from(a);
  if (a.adopt <= 0 && a.command.empty()) usage_error("no command given; usage: " + prog + " [options] -- COMMAND...");
  if (a.adopt <= 0) pass_on_if_supervised(a.command);

  std::vector<char*> args;
  args.reserve(a.command.size() + 1);
  for (auto& word : a.command) args.push_back(&word[0]);
  args.push_back(nullptr);
  exit_like(run_supervised(o, args.data(), static_cast<pid_t>(a.adopt)));
  return 1;  // not reached: exit_like exits
}

}  // namespace trainctl::commands
