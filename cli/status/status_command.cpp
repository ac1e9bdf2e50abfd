// trainctl status JOB (--watch, --json): one row per rank of a running job, read from the
// node state on each of its nodes by trainctl-run's --status-here helper. Runs on a login
// node as the job's user. One way: the job's record (once) -> the nodes' lines -> the view.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "commands.hpp"
#include "job_access.hpp"
#include "job_status.hpp"
#include "node_names.hpp"
#include "node_state.hpp"
#include "parse.hpp"
#include "slurm_job.hpp"
#include "subprocess.hpp"

namespace trainctl::commands {

namespace {

std::atomic<bool> g_stop_watch{false};
extern "C" void on_watch_signal(int) { g_stop_watch.store(true); }

status_job job_facts(const job_record& job) {
  status_job j;
  j.id = job.id;
  j.name = job.name;
  j.state = job.state;
  j.node_list = job.node_list;
  j.end_ms = job.end_ms;
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

// The helpers' lines: each node's round, complete at its "end" line.
struct node_rounds {
  std::map<std::string, std::string> latest, partial;
  std::set<std::string> since_drawn;  // the nodes with a new round since the last draw
  std::string other;                  // the first line from no node (srun's, or a helper's error)

  // Takes the complete lines of `pending`; true when a node's round completed.
  bool take(std::string& pending) {
    bool fresh = false;
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
      const std::string line = pending.substr(0, nl);
      const std::string host = scontrol_field(line, "host");
      if (line.compare(0, 4, "end ") == 0) {
        latest[host] = std::exchange(partial[host], std::string());
        since_drawn.insert(host);
        fresh = true;
      } else if (!host.empty() && line.find(' ') != std::string::npos) {
        partial[host] += line + "\n";
      } else if (other.empty()) {
        other = line;
      }
    }
    return fresh;
  }
  std::string text() const {
    std::string out;
    for (const auto& [host, lines] : latest) out += lines;
    return out;
  }
};

// After the watch's helpers ended (or were ended): 0 when the user stopped it or the job
// ended after a view was drawn, else 1 and why the helpers ended (`other`: their first
// line from no node).
int watch_ended(const std::string& who, const std::string& job_id, bool drawn, const std::string& other,
                started_child& c, int status) {
  if (g_stop_watch.load()) return 0;
  const auto last = show_job_record(job_id, std::chrono::milliseconds(5000), nullptr);
  const std::string state = last ? last->state : "gone";
  if (drawn && state != "RUNNING") {
    std::fprintf(stderr, "%s: status %s: the job is %s; nothing more to watch\n", who.c_str(), job_id.c_str(),
                 state.c_str());
    return 0;
  }
  std::fprintf(stderr, "%s: status %s: %s\n", who.c_str(), job_id.c_str(),
               other.empty() ? c.finish(status).error.c_str() : other.c_str());
  return 1;
}

// --watch: one task per node stays and prints a round every `every` (one job step for
// the whole watch, not one per refresh: slurmctld sees a single step). The view is
// redrawn when a node's round is complete.
int watch_job_status(const std::string& who, const job_record& job, bool json, std::chrono::milliseconds every) {
  child_spec d;
  d.argv =
      srun_helper_on_each_node(job, {"--status-here", job.id, "--status-every", std::to_string(every.count()) + "ms"});
  d.parent_death_signal = SIGTERM;  // srun ends the helper step with it
  d.merge_stderr = true;
  started_child c(d);
  if (!c.error().empty()) {
    std::fprintf(stderr, "%s: status %s: %s\n", who.c_str(), job.id.c_str(), c.error().c_str());
    return 1;
  }
  struct sigaction sa {
  }, old_int{}, old_term{};
  sa.sa_handler = on_watch_signal;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  const std::size_t nodes = static_cast<std::size_t>(std::max(1L, std::atol(job.num_nodes.c_str())));
  node_rounds rounds;
  std::string pending;
  status_job facts = job_facts(job);
  auto facts_at = std::chrono::steady_clock::now();
  const auto started = facts_at;
  bool drawn = false;
  auto drawn_at = started;
  int status = 0;
  bool exited = false;
  while (!g_stop_watch.load() && !exited) {
    pollfd p{c.output_fd(), POLLIN, 0};
    poll(&p, 1, 200);
    c.drain();
    pending += c.take_output();
    const bool fresh = rounds.take(pending);
    exited = waitpid(c.pid(), &status, WNOHANG) == c.pid();
    const auto now = std::chrono::steady_clock::now();
    if (!fresh || (rounds.latest.size() < nodes && now - started < 2 * every)) continue;
    // Once per interval, not once per node: when every node has a new round, or a node
    // is late by half an interval (it still shows its last round).
    if (drawn && rounds.since_drawn.size() < std::min(nodes, rounds.latest.size()) && now - drawn_at < every * 3 / 2)
      continue;
    if (now - facts_at > std::chrono::seconds(30)) {  // EndTime moves with scontrol update; asked rarely
      if (const auto again = show_job_record(facts.id, std::chrono::milliseconds(5000), nullptr))
        facts = job_facts(*again);
      facts_at = now;
    }
    facts.now_ms = unix_now_ms();
    print_view(parse_status_lines(rounds.text(), facts), json, true, every);
    drawn = true;
    drawn_at = now;
    rounds.since_drawn.clear();
  }
  if (!exited) {
    kill(-c.pid(), SIGTERM);
    kill(c.pid(), SIGTERM);
    waitpid(c.pid(), &status, 0);
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  return watch_ended(who, facts.id, drawn, rounds.other, c, status);
}

}  // namespace

// status JOB: one row per rank, read from the node state on each node of the job.
int show_job_status(const std::string& who, const std::string& job, bool json, bool watch,
                    std::chrono::milliseconds every) {
  const auto info = running_job_of_mine(who, "status", job);
  if (!info) return 1;
  if (watch) return watch_job_status(who, *info, json, every);
  child_spec d;
  d.argv = srun_helper_on_each_node(*info, {"--status-here", info->id});
  d.parent_death_signal = SIGTERM;  // srun ends the helper step with it
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
