#include "hang_dump.hpp"

#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <sstream>
#include <thread>

#include "bad_nodes.hpp"
#include "collective_verdict.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "hang_verdict.hpp"
#include "node_names.hpp"
#include "node_state.hpp"
#include "ranks.hpp"
#include "stack_dump.hpp"
#include "time_text.hpp"

namespace trainctl {
namespace {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long every node waits for the whole job's stack files before acting.
constexpr milliseconds kJobDumpWait{30000};
// Without a stacks directory to count the other nodes' dumps by, how long every node
// waits before acting: the others find the hang within a few of their ticks.
constexpr milliseconds kNoDumpGrace{5000};
// How long a node other than the first waits, after its own summary line, for the first
// node's job-wide line before its action may end the step (and with it the first node's
// dump, before that line is written).
constexpr milliseconds kJobLineWait{10000};

// "2026-11-23T07:22:34 TEXT\n", local time.
std::string timed_line(const std::string& text) { return local_timestamp(std::time(nullptr)) + " " + text + "\n"; }

hang_dump_report report_of(const std::ostringstream& out, const std::string& summary) {
  hang_dump_report rep;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) rep.lines.push_back(line);
  rep.summary = summary;
  return rep;
}

// The report through the child's output: the summary on the first line, then the log
// lines, one each (none holds a newline).
std::string encode(const hang_dump_report& rep) {
  auto one_line = [](std::string s) {
    for (char& c : s)
      if (c == '\n') c = ' ';
    return s;
  };
  std::string out = one_line(rep.summary) + "\n";
  for (const auto& l : rep.lines) out += one_line(l) + "\n";
  return out;
}

hang_dump_report decode(const std::string& output) {
  hang_dump_report rep;
  std::istringstream in(output);
  if (!std::getline(in, rep.summary) || rep.summary.empty()) rep.summary = "the stack dump printed nothing";
  for (std::string line; std::getline(in, line);) rep.lines.push_back(line);
  return rep;
}

// Every rank's dump of this hang in the job's stacks directory (`fd`), waited for up to
// kJobDumpWait while fewer than `world` came (0: unknown, a grace instead).
std::vector<rank_stack> wait_for_job_dumps(int fd, const hang_dump_request& r, int world) {
  const std::int64_t since = r.stall_began_ms - r.stall_ms - 60000;
  if (world == 0) std::this_thread::sleep_for(kNoDumpGrace);  // nothing to count by
  std::vector<rank_stack> all = read_dumps(fd, r.run, "hang", since);
  for (auto end = clock::now() + kJobDumpWait; static_cast<int>(all.size()) < world && clock::now() < end;) {
    std::this_thread::sleep_for(milliseconds(200));
    all = read_dumps(fd, r.run, "hang", since);
  }
  return all;
}

// The nodes the whole job's stacks point at, remembered as bad; those with ranks elsewhere
// that the evidence does not blame, said so.
void remember_hung_nodes(const std::vector<rank_stack>& all, const std::string& job, const std::string& dir,
                         std::ostringstream& out) {
  for (const auto& h : unblamed_hosts(all))
    out << "hang: " << h << " is not remembered as a bad node: its ranks elsewhere are beside its others in the "
        << "common frame, so the program's own path holds them, not the node\n";
  for (const auto& [h, why] : suspect_hosts(all)) {
    bad_node b;
    b.when = unix_now_ms() / 1000;
    b.host = h;
    b.job = job.empty() ? "-" : job;
    b.reason = "hung (" + why + "; stacks in " + dir + ")";
    const std::string path = bad_nodes_path(), err = record_bad_node(path, b);
    out << ""
        << (err.empty() ? "remembered " + h + " as a bad node (" + b.reason + ") in " + path
                        : "could not remember " + h + " as a bad node: " + err)
        << "\n";
  }
}

}  // namespace

hang_dump_report take_hang_stacks(const hang_dump_request& r) {
  std::ostringstream out;
  const auto t0 = clock::now();
  std::vector<proc_info> ranks;
  for (const auto& p : find_rank_procs(r.root, r.launchers, r.command_is_rank))
    if (p.pid != getpid() && !r.excluded(p.pid) && live_process_of_mine(p.pid)) ranks.push_back(p);
  std::string why_not = r.dir.checked ? r.dir.problem : "";
  const std::string root = why_not.empty() ? evidence_root(r.dir.dir, r.dir.group, &why_not) : "";
  const std::string dir = root + "/" + r.leaf;
  const owned_fd dir_fd = why_not.empty() ? open_stacks_dir(dir, r.dir.group, &why_not) : owned_fd();
  const int fd = dir_fd.get();
  if (!dir_fd) {
    // No files to count the other nodes by: give them the time to find the hang too
    // (their heartbeats went stale with ours) before the action ends this node's ranks.
    std::this_thread::sleep_for(kNoDumpGrace);
    out << "hang: stacks not saved: " << why_not << "\n";
    return report_of(out, "stacks not saved (" + why_not + ")");
  }
  // The first node's job-wide line for this hang comes after every node's dump, so
  // after this count.
  const std::size_t job_lines_before = job_wide_summaries(fd);
  dump_options o;
  o.out_dir = dir;
  o.dir_fd = fd;
  o.file_mode = r.dir.group ? 0640 : 0600;
  o.id = {r.run, "hang", unix_now_ms()};
  o.python_dir = r.state_dir;
  o.stack_signal = stack_signal_from_env();
  o.reason = "hang: " + r.why;
  const auto stacks = dump_stacks(ranks, o);
  std::size_t saved = 0;
  for (const auto& s : stacks) {
    if (!s.file.empty()) ++saved;
    if (!s.error.empty()) out << "hang: stacks of rank " << s.rank << " not saved: " << s.error << "\n";
  }
  // The summary says what the ranks were doing when a phase's budget ran out.
  const std::string doing_text = r.doing.empty() ? "" : " (" + r.doing + ")";
  std::string summary = with_collectives(summarize(stacks) + doing_text, stacks);
  const auto ms = std::chrono::duration_cast<milliseconds>(clock::now() - t0).count();
  out << "hang: stacks of " << saved << " of " << stacks.size() << " rank" << (stacks.size() == 1 ? "" : "s")
      << " saved in " << dir << "/ after " << ms << " ms: " << summary << "\n";
  // Every node waits for the whole job's files before anyone acts (end-step would
  // otherwise take the ranks of a node that has not dumped yet); the first node then
  // says where the whole job is stuck.
  int world = 0;
  if (!ranks.empty()) world = std::atoi(proc_environ_value(ranks[0].pid, env_var::kWorldSize).c_str());
  if (world == 0) world = std::atoi(env_text(env_var::kSlurmNtasks).c_str());
  const std::vector<rank_stack> all = wait_for_job_dumps(fd, r, world);
  const std::string node = env_text(env_var::kSlurmNodeid);
  if ((node.empty() || node == "0") && world > static_cast<int>(stacks.size())) {
    summary = with_collectives(summarize(all) + doing_text, all);
    out << "hang: the whole job (" << all.size() << " of " << world << " ranks dumped): " << summary << "\n";
    remember_hung_nodes(all, r.job, dir, out);
  }
  // One job-wide line per hang, from the first node; another node's line says whose view it is.
  const bool job_wide = node.empty() || node == "0" || world <= static_cast<int>(stacks.size());
  const std::string line = job_wide ? summary : "only " + node_name() + "'s ranks (node " + node + "): " + summary;
  const std::string why_summary = append_in_dir(fd, "summary.txt", timed_line(line), o.file_mode);
  if (!why_summary.empty()) out << "hang: " << why_summary << "\n";
  if (!job_wide)
    for (auto end = clock::now() + kJobLineWait; job_wide_summaries(fd) <= job_lines_before && clock::now() < end;)
      std::this_thread::sleep_for(milliseconds(100));
  return report_of(out, summary);
}

std::string hang_dump::start(const hang_dump_request& r, const std::vector<int>& ignore_signals) {
  hung_ = true;
  hung_since_ms_ = unix_now_ms();
  child_spec spec;
  spec.ignore_signals = ignore_signals;
  spec.work = [r] { return encode(take_hang_stacks(r)); };
  child_ = std::make_unique<started_child>(spec);
  by_ = clock::now() + kLimit;
  if (child_->error().empty()) return "";
  std::string why = child_->error();
  child_.reset();
  return why;
}

std::optional<hang_dump_report> hang_dump::reaped(pid_t pid, int status) {
  if (!child_ || pid != child_->pid()) return std::nullopt;
  const child_result res = child_->finish(status);
  child_.reset();
  return decode(res.output);
}

bool hang_dump::overdue() {
  if (!child_ || clock::now() < by_) return false;
  child_->abandon();
  child_.reset();
  return true;
}

// Kept, not reset: until it is reaped, its group is the supervisor's own helper and no
// process the command left behind.
void hang_dump::abandon() {
  if (child_) child_->abandon();
}

void hang_dump::drain() {
  if (child_) child_->drain();
}

}  // namespace trainctl
