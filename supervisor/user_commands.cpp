// The commands people run against jobs and the bad-node memory, shared by trainctl-run's
// flags and the trainctl verbs. `who` starts every line the command prints (the
// program), `what` names the command in its errors ("--dump-stacks", "stacks").
#include "user_commands.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "bad_nodes.hpp"
#include "gpu_memory.hpp"
#include "job_status.hpp"
#include "node_state.hpp"
#include "parse.hpp"
#include "slurm_job.hpp"
#include "stack_dump.hpp"
#include "subprocess.hpp"

namespace trainctl::commands {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// The job's one line from scontrol when it is running and this user may look inside
// it; else one line said (`what JOB: why; accepted: ...`) and nothing.
std::optional<std::string> running_job_of_mine(const std::string& who, const std::string& what,
                                               const std::string& job) {
  std::string error;
  auto info = scontrol_show("job", job, std::chrono::milliseconds(10000), &error);
  if (!info || scontrol_field(*info, "JobState") != "RUNNING") {
    const std::string why = info ? "the job is " + scontrol_field(*info, "JobState") + ", not RUNNING"
                                 : "no such job that scontrol can show (" + error + ")";
    std::fprintf(stderr, "%s: %s %s: %s; accepted: the id of a running job\n", who.c_str(), what.c_str(), job.c_str(),
                 why.c_str());
    return std::nullopt;
  }
  // SLURM refuses a step in another user's job; said in words rather than as srun's
  // "Access/permission denied". UserId is "name(uid)".
  const std::string user = scontrol_field(*info, "UserId");
  const size_t paren = user.find('(');
  const long uid = paren == std::string::npos ? -1 : std::strtol(user.c_str() + paren + 1, nullptr, 10);
  if (uid >= 0 && getuid() != 0 && static_cast<uid_t>(uid) != getuid()) {
    std::fprintf(stderr, "%s: %s %s: the job is %s's; only its own user can look inside it\n", who.c_str(),
                 what.c_str(), job.c_str(), user.substr(0, paren).c_str());
    return std::nullopt;
  }
  return info;
}

// One task of trainctl-run (the one beside this program: both are installed in the
// same bin directory) on each of the job's nodes, beside its running steps.
std::vector<std::string> srun_helper_on_each_node(const std::string& job_line, const std::vector<std::string>& args) {
  char self[4096] = {};
  std::string helper = "trainctl-run";
  if (readlink("/proc/self/exe", self, sizeof self - 1) > 0) {
    const std::string me = self;
    helper = me.substr(0, me.rfind('/') + 1) + "trainctl-run";
  }
  std::vector<std::string> argv{"srun",
                                "--jobid=" + scontrol_field(job_line, "JobId"),
                                "--overlap",
                                "--quiet",
                                "-N",
                                scontrol_field(job_line, "NumNodes"),
                                "--ntasks-per-node=1",
                                "-w",
                                scontrol_field(job_line, "NodeList"),
                                helper};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace

// --dump-stacks JOB: one task on each of the job's nodes (srun --overlap, beside the
// running steps) writes its ranks' stacks; the summary is made from what they print.
int dump_stacks_of_job(const std::string& who, const std::string& what, const std::string& job,
                       const std::string& log_dir) {
  using namespace trainctl;
  const auto info = running_job_of_mine(who, what, job);
  if (!info) return 1;
  const std::string& job_line = *info;
  // Given (--log-dir, TRAINCTL_LOG_DIR here): that. Else where the job's ranks put
  // theirs, which only the nodes can read, falling back to the job's working directory.
  std::string dir = log_dir.empty() ? env("TRAINCTL_LOG_DIR") : log_dir;
  dir = dir.empty() ? "fallback:" + scontrol_field(job_line, "WorkDir") + "/stacks-" + job : dir + "/stacks-" + job;
  child_spec d;
  d.argv = srun_helper_on_each_node(job_line, {"--dump-stacks-here", job, "--stacks-dir", dir});
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
  for (const auto& e : errors)
    std::fprintf(stderr, "%s: %s %s: %s\n", who.c_str(), what.c_str(), job.c_str(), e.c_str());
  if (!r.ok() && stacks.empty()) {
    // srun's own line says why (permission denied, no such job step...); else ours.
    const std::string why = !other.empty() ? other.front() : errors.empty() ? r.error : "";
    if (!why.empty()) std::fprintf(stderr, "%s: %s %s: %s\n", who.c_str(), what.c_str(), job.c_str(), why.c_str());
    return 1;
  }
  std::sort(stacks.begin(), stacks.end(), [](const rank_stack& a, const rank_stack& b) { return a.rank < b.rank; });
  const long long ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  if (stacks.empty() && !errors.empty()) return 1;
  if (stacks.empty()) {
    std::fprintf(stderr, "%s: %s %s: no rank processes found on its nodes (%lld ms)\n", who.c_str(), what.c_str(),
                 job.c_str(), ms);
    return 1;
  }
  std::printf("%s: stacks of %zu ranks of job %s in %s/ (%lld ms): %s\n", who.c_str(), stacks.size(), job.c_str(),
              stacks[0].file.c_str(), ms, summarize(stacks).c_str());
  return errors.empty() ? 0 : 1;
}

// --bad-nodes: the hosts the next task should keep off, comma separated, on stdout;
// one line per host on stderr says why. The cap keeps enough of the partition for the
// job: its node count minus the job's, unless --bad-node-cap says less.
int print_bad_nodes(const std::string& who, const std::string& cap_option, const std::string& expiry_text,
                    const std::string& cap_text) {
  using namespace trainctl;
  std::chrono::milliseconds expiry{};
  long long cap = -1;
  const std::string expiry_option = cap_option == "--cap" ? "--expiry" : "--bad-node-expiry";
  try {
    expiry = parse_duration(expiry_text, 'h');
  } catch (const parse_error& e) {
    std::fprintf(stderr, "%s: %s: %s\n", who.c_str(), expiry_option.c_str(), e.what());
    return 2;
  }
  try {
    if (!cap_text.empty()) cap = parse_int(cap_text, 0, 100000);
  } catch (const parse_error& e) {
    std::fprintf(stderr, "%s: %s: %s\n", who.c_str(), cap_option.c_str(), e.what());
    return 2;
  }
  std::string why_cap = cap_option;
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
        std::fprintf(stderr, "%s: keeping off %s: %s, %llds ago (job %s)\n", who.c_str(), host.c_str(),
                     it->reason.c_str(), static_cast<long long>(now - it->when), it->job.c_str());
        break;
      }
  }
  if (every.size() > keep_off.size())
    std::fprintf(stderr, "%s: %zu more bad node%s not excluded (%s)\n", who.c_str(), every.size() - keep_off.size(),
                 every.size() - keep_off.size() == 1 ? "" : "s", why_cap.c_str());
  std::printf("%s\n", list.c_str());
  return 0;
}

// mark: a node into the bad-node memory, for a health check that failed (the template's
// HEALTH_CHECK, or a user's own prolog script); this node when `host` is empty.
int mark_bad_node(const std::string& who, const std::string& what, const std::string& host, const std::string& reason) {
  using namespace trainctl;
  if (reason.find('\n') != std::string::npos || reason.empty()) {
    std::fprintf(stderr, "%s: %s: the reason is %s; accepted: one line of text\n", who.c_str(), what.c_str(),
                 reason.empty() ? "empty" : "more than one line");
    return 2;
  }
  bad_node b;
  b.when = static_cast<std::int64_t>(std::time(nullptr));
  b.host = host.empty() ? node_name() : host;
  b.job = env("SLURM_JOB_ID").empty() ? "-" : env("SLURM_JOB_ID");
  // The GPUs are this node's: said only when it is this node that is marked.
  if (b.host == node_name()) b.gpus = gpu_uuids();
  b.reason = reason;
  const std::string path = bad_nodes_path(), why = record_bad_node(path, b);
  if (!why.empty()) {
    std::fprintf(stderr, "%s: %s: %s\n", who.c_str(), what.c_str(), why.c_str());
    return valid_node_name(b.host) ? 1 : 2;
  }
  std::fprintf(stderr, "%s: remembered %s as a bad node (%s) in %s\n", who.c_str(), b.host.c_str(), reason.c_str(),
               path.c_str());
  return 0;
}

// forget: every finding about `host` out of the bad-node memory (a node repaired).
int forget_bad_node(const std::string& who, const std::string& host) {
  using namespace trainctl;
  const std::string path = bad_nodes_path();
  std::size_t removed = 0;
  const std::string why = trainctl::forget_bad_node(path, host, &removed);
  if (!why.empty()) {
    std::fprintf(stderr, "%s: bad-nodes forget %s: %s\n", who.c_str(), host.c_str(), why.c_str());
    return valid_node_name(host) ? 1 : 2;
  }
  std::fprintf(stderr, "%s: %s: %zu finding%s forgotten (%s)\n", who.c_str(), host.c_str(), removed,
               removed == 1 ? "" : "s", path.c_str());
  return 0;
}

namespace {

std::atomic<bool> g_stop_watch{false};
extern "C" void on_watch_signal(int) { g_stop_watch.store(true); }

status_job job_facts(const std::string& job_line) {
  status_job j;
  j.id = scontrol_field(job_line, "JobId");
  j.name = scontrol_field(job_line, "JobName");
  j.state = scontrol_field(job_line, "JobState");
  j.node_list = scontrol_field(job_line, "NodeList");
  try {
    j.end_ms = parse_slurm_timestamp(scontrol_field(job_line, "EndTime"));
  } catch (const std::exception&) {
    j.end_ms = 0;  // shown without the time limit rather than not at all
  }
  j.now_ms = unix_now_ms();
  return j;
}

// Why no view could be made: srun's own line (permission denied, no such job step...)
// when it said one, else ours.
std::string why_no_view(const job_status& s, const std::string& error) {
  if (!s.other.empty()) return s.other.front();
  if (!s.errors.empty()) return s.errors.front();
  return error.empty() ? "no node answered" : error;
}

void print_view(const job_status& s, bool json, bool watch, std::chrono::milliseconds every) {
  if (json) {
    std::fputs(format_status_json(s, watch).c_str(), stdout);
  } else if (watch && isatty(STDOUT_FILENO)) {
    // In place, as watch(1) does: home, clear, the heading, the view.
    std::printf("\033[H\033[J%s: trainctl status %s, every %s (Ctrl-C ends)\n\n", node_name().c_str(), s.job.id.c_str(),
                format_duration(every).c_str());
    std::fputs(format_status_table(s).c_str(), stdout);
  } else {
    std::fputs(format_status_table(s).c_str(), stdout);
    if (watch) std::fputs("\n", stdout);
  }
  std::fflush(stdout);
}

// --watch: one task per node stays and prints a round every `every` (one job step for
// the whole watch, not one per refresh: slurmctld sees a single step). The view is
// redrawn when a node's round is complete.
int watch_job_status(const std::string& who, const std::string& job_line, bool json, std::chrono::milliseconds every) {
  child_spec d;
  d.argv = srun_helper_on_each_node(job_line, {"--status-here", scontrol_field(job_line, "JobId"), "--status-every",
                                               std::to_string(every.count()) + "ms"});
  d.merge_stderr = true;
  started_child c(d);
  if (!c.error().empty()) {
    std::fprintf(stderr, "%s: status %s: %s\n", who.c_str(), scontrol_field(job_line, "JobId").c_str(),
                 c.error().c_str());
    return 1;
  }
  struct sigaction sa {
  }, old_int{}, old_term{};
  sa.sa_handler = on_watch_signal;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  const std::size_t nodes =
      static_cast<std::size_t>(std::max(1L, std::atol(scontrol_field(job_line, "NumNodes").c_str())));
  std::map<std::string, std::string> latest, partial;
  std::string pending, other;
  status_job facts = job_facts(job_line);
  auto facts_at = std::chrono::steady_clock::now();
  const auto started = facts_at;
  bool drawn = false;
  int status = 0;
  bool exited = false;
  while (!g_stop_watch.load() && !exited) {
    pollfd p{c.output_fd(), POLLIN, 0};
    poll(&p, 1, 200);
    c.drain();
    pending += c.take_output();
    bool fresh = false;
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
      const std::string line = pending.substr(0, nl);
      const std::string host = scontrol_field(line, "host");
      if (line.compare(0, 4, "end ") == 0) {
        latest[host] = std::exchange(partial[host], std::string());
        fresh = true;
      } else if (!host.empty() && line.find(' ') != std::string::npos) {
        partial[host] += line + "\n";
      } else if (other.empty()) {
        other = line;
      }
    }
    exited = waitpid(c.pid(), &status, WNOHANG) == c.pid();
    const auto now = std::chrono::steady_clock::now();
    if (!fresh || (latest.size() < nodes && now - started < 2 * every)) continue;
    if (now - facts_at > std::chrono::seconds(30)) {  // EndTime moves with scontrol update; asked rarely
      if (const auto info = scontrol_show("job", facts.id, std::chrono::milliseconds(5000), nullptr))
        facts = job_facts(*info);
      facts_at = now;
    }
    facts.now_ms = unix_now_ms();
    std::string text;
    for (const auto& [host, lines] : latest) text += lines;
    print_view(parse_status_lines(text, facts), json, true, every);
    drawn = true;
  }
  if (!exited) {
    kill(-c.pid(), SIGTERM);
    kill(c.pid(), SIGTERM);
    waitpid(c.pid(), &status, 0);
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (g_stop_watch.load()) return 0;
  const auto info = scontrol_show("job", facts.id, std::chrono::milliseconds(5000), nullptr);
  const std::string state = info ? scontrol_field(*info, "JobState") : "gone";
  if (drawn && state != "RUNNING") {
    std::fprintf(stderr, "%s: status %s: the job is %s; nothing more to watch\n", who.c_str(), facts.id.c_str(),
                 state.c_str());
    return 0;
  }
  std::fprintf(stderr, "%s: status %s: %s\n", who.c_str(), facts.id.c_str(),
               other.empty() ? c.finish(status).error.c_str() : other.c_str());
  return 1;
}

}  // namespace

// status JOB: one row per rank, read from the node state on each node of the job.
int show_job_status(const std::string& who, const std::string& job, bool json, bool watch,
                    std::chrono::milliseconds every) {
  const auto info = running_job_of_mine(who, "status", job);
  if (!info) return 1;
  if (watch) return watch_job_status(who, *info, json, every);
  child_spec d;
  d.argv = srun_helper_on_each_node(*info, {"--status-here", scontrol_field(*info, "JobId")});
  d.deadline = std::chrono::milliseconds(60000);
  d.merge_stderr = true;
  const child_result r = run_child(d);
  const job_status s = parse_status_lines(r.output, job_facts(*info));
  if (s.nodes.empty()) {
    std::fprintf(stderr, "%s: status %s: %s\n", who.c_str(), job.c_str(), why_no_view(s, r.error).c_str());
    return 1;
  }
  print_view(s, json, false, every);
  return 0;
}

}  // namespace trainctl::commands
