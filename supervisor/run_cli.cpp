// trainctl-run: the supervisor by hand, for clusters without the SPANK plugin.
//   srun trainctl-run --graceful-exit=10 --kill-switch -- torchrun ... train.py
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include "bad_nodes.hpp"
#include "gpu_memory.hpp"
#include "options.hpp"
#include "parse.hpp"
#include "slurm_job.hpp"
#include "stack_dump.hpp"
#include "subprocess.hpp"
#include "supervisor.hpp"
#include "switch_paths.hpp"
#include "trainctl/trainctl.h"

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

[[noreturn]] void usage_error(const std::string& line) {
  std::fprintf(stderr, "trainctl-run: %s (see trainctl-run --help)\n", line.c_str());
  std::exit(2);
}

// --dump-stacks JOB: one task on each of the job's nodes (srun --overlap, beside the
// running steps) writes its ranks' stacks; the summary is made from what they print.
int dump_stacks_of_job(const std::string& job, const std::string& log_dir) {
  using namespace trainctl;
  std::string error;
  const auto info = scontrol_show("job", job, std::chrono::milliseconds(10000), &error);
  const std::string job_line = info ? *info : "";
  if (!info || scontrol_field(job_line, "JobState") != "RUNNING") {
    const std::string why = info ? "the job is " + scontrol_field(job_line, "JobState") + ", not RUNNING"
                                 : "no such job that scontrol can show (" + error + ")";
    std::fprintf(stderr, "trainctl-run: --dump-stacks %s: %s; accepted: the id of a running job\n", job.c_str(),
                 why.c_str());
    return 1;
  }
  // Given (--log-dir, TRAINCTL_LOG_DIR here): that. Else where the job's ranks put
  // theirs, which only the nodes can read, falling back to the job's working directory.
  std::string dir = log_dir.empty() ? env("TRAINCTL_LOG_DIR") : log_dir;
  dir = dir.empty() ? "fallback:" + scontrol_field(job_line, "WorkDir") + "/stacks-" + job : dir + "/stacks-" + job;
  char self[4096] = {};
  if (readlink("/proc/self/exe", self, sizeof self - 1) <= 0) std::snprintf(self, sizeof self, "trainctl-run");
  child_spec d;
  d.argv = {"srun",
            "--jobid=" + job,
            "--overlap",
            "--quiet",
            "-N",
            scontrol_field(job_line, "NumNodes"),
            "--ntasks-per-node=1",
            "-w",
            scontrol_field(job_line, "NodeList"),
            self,
            "--dump-stacks-here",
            job,
            "--stacks-dir",
            dir};
  d.deadline = std::chrono::milliseconds(180000);
  d.merge_stderr = true;  // srun's own refusals ("Access/permission denied") are the answer then
  const auto t0 = std::chrono::steady_clock::now();
  const child_result r = run_child(d);
  std::vector<rank_stack> stacks;
  std::vector<std::string> errors, other;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.compare(0, 6, "error ") == 0) errors.push_back(line.substr(6));
    if (line.compare(0, 11, "stack rank=") != 0) {
      if (line.compare(0, 6, "error ") != 0 && !line.empty()) other.push_back(line);
      continue;
    }
    rank_stack s;
    s.rank = std::atoi(line.c_str() + 11);
    s.host = scontrol_field(line, "host");
    const size_t f = line.find(" frame=");
    s.frame = f == std::string::npos ? "" : line.substr(f + 7);
    s.file = scontrol_field(line.substr(0, f), "dir");  // where that node wrote
    stacks.push_back(s);
  }
  for (const auto& e : errors) std::fprintf(stderr, "trainctl-run: --dump-stacks %s: %s\n", job.c_str(), e.c_str());
  if (!r.ok() && stacks.empty()) {
    // srun's own line says why (permission denied, no such job step...); else ours.
    const std::string why = !other.empty() ? other.front() : errors.empty() ? r.error : "";
    if (!why.empty()) std::fprintf(stderr, "trainctl-run: --dump-stacks %s: %s\n", job.c_str(), why.c_str());
    return 1;
  }
  std::sort(stacks.begin(), stacks.end(), [](const rank_stack& a, const rank_stack& b) { return a.rank < b.rank; });
  const long long ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  if (stacks.empty() && !errors.empty()) return 1;
  if (stacks.empty()) {
    std::fprintf(stderr, "trainctl-run: --dump-stacks %s: no rank processes found on its nodes (%lld ms)\n",
                 job.c_str(), ms);
    return 1;
  }
  std::printf("trainctl-run: stacks of %zu ranks of job %s in %s/ (%lld ms): %s\n", stacks.size(), job.c_str(),
              stacks[0].file.c_str(), ms, summarize(stacks).c_str());
  return errors.empty() ? 0 : 1;
}

// --bad-nodes: the hosts the next task should keep off, comma separated, on stdout;
// one line per host on stderr says why. The cap keeps enough of the partition for the
// job: its node count minus the job's, unless --bad-node-cap says less.
int print_bad_nodes(const std::string& expiry_text, const std::string& cap_text) {
  using namespace trainctl;
  std::chrono::milliseconds expiry{};
  long long cap = -1;
  try {
    expiry = parse_duration(expiry_text, 'h');
    if (!cap_text.empty()) cap = parse_int(cap_text, 0, 100000);
  } catch (const parse_error& e) {
    usage_error(std::string(cap_text.empty() ? "--bad-node-expiry: " : "--bad-node-expiry/--bad-node-cap: ") +
                e.what());
  }
  std::string why_cap = "--bad-node-cap";
  if (cap < 0 && !env("SLURM_JOB_ID").empty()) {
    const std::chrono::milliseconds timeout(10000);
    const auto job = scontrol_show("job", env("SLURM_JOB_ID"), timeout, nullptr);
    const std::string partition = job ? scontrol_field(*job, "Partition") : "";
    const auto part = job ? scontrol_show("partition", partition, timeout, nullptr) : std::nullopt;
    if (part) {
      const long long total = std::atoll(scontrol_field(*part, "TotalNodes").c_str());
      const long long need = std::atoll(scontrol_field(*job, "NumNodes").c_str());
      cap = std::max(0LL, total - need);
      why_cap = "partition " + partition + " has " + std::to_string(total) + " nodes and the job needs " +
                std::to_string(need);
    }
  }
  if (cap < 0) {
    cap = 4;
    why_cap = "at most 4 outside a job";
  }
  const std::string path = bad_nodes_path();
  const auto all = read_bad_nodes(path);
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  const auto keep_off = nodes_to_exclude(all, now, std::chrono::duration_cast<std::chrono::seconds>(expiry),
                                         static_cast<std::size_t>(cap));
  const auto every = nodes_to_exclude(all, now, std::chrono::duration_cast<std::chrono::seconds>(expiry), 1 << 20);
  std::string list;
  for (const auto& host : keep_off) {
    list += (list.empty() ? "" : ",") + host;
    for (auto it = all.rbegin(); it != all.rend(); ++it)
      if (it->host == host) {
        std::fprintf(stderr, "trainctl-run: keeping off %s: %s, %llds ago (job %s)\n", host.c_str(), it->reason.c_str(),
                     static_cast<long long>(now - it->when), it->job.c_str());
        break;
      }
  }
  if (every.size() > keep_off.size())
    std::fprintf(stderr, "trainctl-run: %zu more bad node%s not excluded (%s)\n", every.size() - keep_off.size(),
                 every.size() - keep_off.size() == 1 ? "" : "s", why_cap.c_str());
  std::printf("%s\n", list.c_str());
  return 0;
}

// --mark-bad-node REASON: this node into the bad-node memory, for a health check that
// failed (the template's HEALTH_CHECK, or a user's own prolog script).
int mark_bad_node(const std::string& reason) {
  using namespace trainctl;
  if (reason.find('\n') != std::string::npos)
    usage_error("--mark-bad-node: the reason spans lines; accepted: one line");
  bad_node b;
  b.when = static_cast<std::int64_t>(std::time(nullptr));
  b.host = node_name();
  b.job = env("SLURM_JOB_ID").empty() ? "-" : env("SLURM_JOB_ID");
  b.gpus = gpu_uuids();
  b.reason = reason;
  const std::string path = bad_nodes_path(), why = record_bad_node(path, b);
  if (!why.empty()) {
    std::fprintf(stderr, "trainctl-run: --mark-bad-node: %s\n", why.c_str());
    return 1;
  }
  std::fprintf(stderr, "trainctl-run: remembered %s as a bad node (%s) in %s\n", b.host.c_str(), reason.c_str(),
               path.c_str());
  return 0;
}

int run_main(int argc, char** argv) {
  using namespace trainctl;
  CLI::App app{
      "Runs COMMAND (a launcher such as torchrun, or the training program itself) so that SLURM's "
      "time-limit and preemption notices reach the rank processes without killing the launcher, the "
      "kill and save switches are watched once per node, and COMMAND's exit status is passed on.",
      "trainctl-run"};
  app.set_version_flag("--version", "trainctl-run " + std::to_string(TRAINCTL_VERSION_MAJOR) + "." +
                                        std::to_string(TRAINCTL_VERSION_MINOR) + "." +
                                        std::to_string(TRAINCTL_VERSION_PATCH));
  std::string graceful, deadline, kill_switch, save_switch, launchers, state, shield, on_notice;
  std::string on_notice_timeout = format_duration(option::kOnNoticeTimeoutDefault);
  std::string hang_timeout = "off", hang_start_timeout, hang_action = "alert", log_dir, dump_job, dump_here, stacks_dir;
  bool bad_nodes = false;
  std::string mark_bad;
  std::string bad_expiry = env("TRAINCTL_BAD_NODE_EXPIRY").empty() ? "24h" : env("TRAINCTL_BAD_NODE_EXPIRY");
  std::string bad_cap = env("TRAINCTL_BAD_NODE_CAP");
  std::string signal_text = signal_name(option::kGracefulSignalDefault);
  std::string poll = format_duration(option::kPollIntervalDefault);
  std::string endtime_poll = format_duration(option::kEndtimePollDefault);
  bool no_shield = false, batch = false;
  long adopt = 0;
  std::vector<std::string> command;
  app.add_option(option::kGracefulExit.name, graceful, option::kGracefulExit.help);
  app.add_option("--deadline", deadline, "ask the ranks to exit at this unix time (seconds)");
  auto* ks = app.add_option(option::kKillSwitch.name, kill_switch,
                            std::string(option::kKillSwitch.help) + "; given bare: $KILL_SWITCH if set")
                 ->expected(0, 1);
  auto* ss = app.add_option(option::kSaveSwitch.name, save_switch,
                            std::string(option::kSaveSwitch.help) + "; given bare: $SAVE_SWITCH if set")
                 ->expected(0, 1);
  app.add_option(option::kGracefulSignal.name, signal_text,
                 std::string(option::kGracefulSignal.help) + " (default " + signal_text + ")");
  app.add_option("--shield", shield,
                 "signals the command ignores so they cannot kill a launcher (default TERM,USR1 "
                 "and the graceful signal)");
  app.add_flag(option::kNoShield.name, no_shield, option::kNoShield.help);
  app.add_option(option::kPollInterval.name, poll, std::string(option::kPollInterval.help) + " (default " + poll + ")");
  app.add_option(option::kEndtimePoll.name, endtime_poll,
                 std::string(option::kEndtimePoll.help) + " (default " + endtime_poll + ")");
  app.add_option(option::kLaunchers.name, launchers, option::kLaunchers.help);
  app.add_flag(option::kBatch.name, batch, option::kBatch.help);
  app.add_option(option::kOnNotice.name, on_notice, option::kOnNotice.help);
  app.add_option(option::kOnNoticeTimeout.name, on_notice_timeout,
                 std::string(option::kOnNoticeTimeout.help) + " (default " + on_notice_timeout + ")");
  app.add_option(option::kHangTimeout.name, hang_timeout, option::kHangTimeout.help);
  app.add_option(option::kHangStartTimeout.name, hang_start_timeout, option::kHangStartTimeout.help);
  app.add_option(option::kHangAction.name, hang_action, std::string(option::kHangAction.help) + " (default alert)");
  app.add_option(option::kLogDir.name, log_dir, option::kLogDir.help);
  app.add_option("--dump-stacks", dump_job,
                 "write every rank's Python and native stacks of running job JOB into LOG_DIR/stacks-JOB/ (through "
                 "srun on each of its nodes), say where they are stuck, and exit");
  app.add_flag("--bad-nodes", bad_nodes,
               "print the nodes the next array task should keep off (where a task of yours crashed, hung or "
               "straggled), comma separated, for scontrol update ExcNodeList= or sbatch --exclude=, and exit");
  app.add_option("--mark-bad-node", mark_bad,
                 "remember this node as bad, with this reason (e.g. from a health check that failed), and exit");
  app.add_option("--bad-node-expiry", bad_expiry,
                 "with --bad-nodes: forget a finding after this long (default 24h, $TRAINCTL_BAD_NODE_EXPIRY)");
  app.add_option("--bad-node-cap", bad_cap,
                 "with --bad-nodes: at most this many (default: the partition's nodes minus the job's, "
                 "$TRAINCTL_BAD_NODE_CAP)");
  app.add_option("--dump-stacks-here", dump_here, "the part of --dump-stacks that runs on each node")->group("");
  app.add_option("--stacks-dir", stacks_dir, "with --dump-stacks-here: where the files go")->group("");
  app.add_option(option::kAdopt.name, adopt, option::kAdopt.help)->group("");
  app.add_option("--state", state, "node state file (default: per job step and node)")->group("");
  app.add_option("command", command, "the command to run")->expected(-1);
  app.positionals_at_end(true);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    usage_error(e.what());
  }

  if (!dump_here.empty()) return dump_job_stacks_here(dump_here, stacks_dir, "on demand (trainctl-run --dump-stacks)");
  if (!dump_job.empty()) return dump_stacks_of_job(dump_job, log_dir);
  if (bad_nodes) return print_bad_nodes(bad_expiry, bad_cap);
  if (!mark_bad.empty()) return mark_bad_node(mark_bad);

  supervisor_options o;
  try {
    if (!graceful.empty()) o.graceful_exit = option::parse_graceful_exit(graceful);
  } catch (const parse_error& e) {
    usage_error(std::string("--graceful-exit: ") + e.what());
  }
  try {
    if (!deadline.empty()) o.deadline = parse_unix_time(deadline);
  } catch (const parse_error& e) {
    usage_error(std::string("--deadline: ") + e.what());
  }
  try {
    o.graceful_signal = option::parse_notice_signal(signal_text);
  } catch (const parse_error& e) {
    usage_error(std::string("--graceful-signal: ") + e.what());
  }
  try {
    if (!no_shield) {
      o.shield = shield.empty() ? option::default_shield() : option::parse_notice_signal_list(shield);
      if (std::find(o.shield.begin(), o.shield.end(), o.graceful_signal) == o.shield.end())
        o.shield.push_back(o.graceful_signal);
    } else {
      o.shield.clear();
    }
  } catch (const parse_error& e) {
    usage_error(std::string("--shield: ") + e.what());
  }
  try {
    o.poll_interval = option::parse_poll_interval(poll);
  } catch (const parse_error& e) {
    usage_error(std::string("--poll-interval: ") + e.what());
  }
  try {
    o.endtime_poll = option::parse_endtime_poll(endtime_poll);
  } catch (const parse_error& e) {
    usage_error(std::string("--endtime-poll: ") + e.what());
  }
  try {
    o.hang_timeout = option::parse_hang_timeout(hang_timeout);
    if (!hang_start_timeout.empty()) {
      try {
        o.hang_start_timeout = option::parse_hang_timeout(hang_start_timeout);
      } catch (const parse_error& e) {
        const std::string what = e.what();  // names --hang-timeout, whose rules it shares
        throw parse_error(std::string(option::kHangStartTimeout.name) +
                          what.substr(std::strlen(option::kHangTimeout.name)));
      }
    } else if (o.hang_timeout.count() > 0) {
      o.hang_start_timeout = std::max(3 * o.hang_timeout, std::chrono::milliseconds(std::chrono::minutes(10)));
    }
    o.on_hang = static_cast<trainctl::hang_action>(option::parse_hang_action(hang_action));
    o.log_dir = log_dir;
    o.on_notice_timeout = option::parse_on_notice_timeout(on_notice_timeout);
    o.on_notice = option::check_on_notice(on_notice);
  } catch (const parse_error& e) {
    usage_error(e.what());
  }
  for (std::string_view name : split(launchers, ','))
    if (!name.empty()) o.launchers.emplace_back(name);
  const std::string submit = env("SLURM_SUBMIT_DIR"), job_name = env("SLURM_JOB_NAME");
  // Given with a path: that path. Given bare: $KILL_SWITCH (or $SAVE_SWITCH), else the
  // default. Not given: whatever the environment says, possibly nothing.
  auto resolve = [&](const CLI::Option* opt, const std::string& value, const char* var, const char* kind) {
    if (opt->count() == 0) return env(var);
    if (!value.empty()) return value;
    return !env(var).empty() ? env(var) : default_switch_path(kind, submit, job_name);
  };
  o.kill_switch = resolve(ks, kill_switch, "KILL_SWITCH", "kill-switch");
  o.save_switch = resolve(ss, save_switch, "SAVE_SWITCH", "save-switch");
  o.batch = batch;
  o.job_id = env("SLURM_JOB_ID");
  o.state_path = state;
  const std::string task = env("SLURM_PROCID");
  o.log_prefix = "trainctl-run" + (env("SLURMD_NODENAME").empty()
                                       ? std::string()
                                       : "[" + env("SLURMD_NODENAME") + (task.empty() ? "" : " task " + task) + "]");
  if (adopt <= 0 && command.empty()) usage_error("no command given; usage: trainctl-run [options] -- COMMAND...");

  std::vector<char*> args;
  args.reserve(command.size() + 1);
  for (auto& a : command) args.push_back(&a[0]);
  args.push_back(nullptr);
  exit_like(run_supervised(o, args.data(), static_cast<pid_t>(adopt)));
  return 1;  // not reached: exit_like exits
}

}  // namespace

int main(int argc, char** argv) {
  // The supervisor reports its own failures; this only turns what nobody expected
  // (before the command starts) into one line instead of std::terminate's abort.
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainctl-run: %s\n", e.what());
    return 1;
  }
}
