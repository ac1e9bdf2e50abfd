#include "node_health.hpp"

#include <dirent.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "bad_nodes.hpp"
#include "gpu_memory.hpp"
#include "hang_budget.hpp"
#include "node_state.hpp"
#include "parse.hpp"
#include "ranks.hpp"
#include "save_times.hpp"
#include "stack_dump.hpp"
#include "straggler_record.hpp"

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
// A dump (stacks, the wait for the other nodes) that takes longer is ended.
constexpr milliseconds kDumpLimit{120000};
// How long a node that may be the crash culprit waits for the other nodes' evidence.
constexpr milliseconds kEvidenceWait{3000};
// Writing a straggler finding: one line in the log directory, one in the home.
constexpr milliseconds kSlowRecordLimit{10000};
// How often the node state's heartbeat slots are looked at for new ranks when nothing
// else wakes the supervisor: ranks say when they arrive (SIGCHLD), so this is a fallback.
constexpr milliseconds kNewRankLook{60000};

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// The clock skew between nodes that an order of deaths must beat to count (ms):
// TRAINCTL_CLOCK_SKEW_MS, default 50 (NTP keeps a cluster's nodes within a few ms).
std::int64_t clock_skew_ms() {
  const std::string v = env_or_empty("TRAINCTL_CLOCK_SKEW_MS");
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  return !v.empty() && *end == '\0' && n >= 0 ? n : 50;
}

std::string read_small(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string s;
  std::getline(in, s, '\0');
  return s;
}

std::string how_it_ended(int wait_status) {
  if (wait_status < 0) return "an unknown cause";
  if (WIFSIGNALED(wait_status)) return "SIG" + signal_name(WTERMSIG(wait_status));
  return "exit status " + std::to_string(WEXITSTATUS(wait_status));
}

std::string to_ms_text(std::int64_t ms) { return std::to_string(ms) + " ms"; }

// "2026-11-23T07:22:34 TEXT\n", local time.
std::string timed_line(const std::string& text) {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return std::string(buf) + " " + text + "\n";
}

// How many nodes the job step runs on (SLURM_STEP_NUM_NODES, else SLURM_JOB_NUM_NODES,
// else 1): only a step on several nodes compares first deaths.
int step_nodes() {
  for (const char* name : {"SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES"}) {
    const int n = std::atoi(env_or_empty(name).c_str());
    if (n > 0) return n;
  }
  return 1;
}

// Another node's first rank death, as it wrote it into the step's crash evidence.
struct node_death {
  std::string node;
  std::int64_t first_ms = 0;
  int status = -1;  // a wait status; -1 unknown
};

// Every other node's line in the crash evidence directory (open as `fd`): regular files
// of this user named as nodes, read without following links or blocking.
std::vector<node_death> other_deaths(int fd, const std::string& me) {
  std::vector<node_death> out;
  DIR* d = fdopendir(dup(fd));
  while (dirent* e = d != nullptr ? readdir(d) : nullptr) {
    const std::string name = e->d_name;
    if (name == me || !valid_node_name(name)) continue;
    const int f = openat(fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    struct stat fs {};
    char buf[128] = {};
    if (f < 0) continue;
    const bool ours = fstat(f, &fs) == 0 && S_ISREG(fs.st_mode) && fs.st_uid == getuid();
    const ssize_t n = ours ? read(f, buf, sizeof buf - 1) : -1;
    close(f);
    long long t = 0;
    int status = -1;
    if (n <= 0 || std::sscanf(buf, "first_ms=%lld status=%d", &t, &status) < 1) continue;
    out.push_back({name, t, status});
  }
  if (d != nullptr) closedir(d);
  return out;
}

// Marks this node's judgement done in the crash evidence directory (open as `fd`) and,
// when every node of the step has marked it and none was blamed, removes the directory:
// a step that ended without a finding leaves nothing in the log directory. A node whose
// supervisor never got here (killed) leaves it, and a blamed node's evidence is kept for
// the admin who reads the bad-node memory. Runs in a child (the log directory may stall).
std::string close_evidence(int fd, const std::string& dir, const std::string& me, int nodes, bool blamed) {
  std::string why = append_in_dir(fd, me + ".done", "\n", 0600);
  if (blamed && why.empty()) why = append_in_dir(fd, "blamed", me + "\n", 0600);
  struct stat st {};
  int done = 0;
  bool keep = fstatat(fd, "blamed", &st, AT_SYMLINK_NOFOLLOW) == 0;
  std::vector<std::string> names;
  DIR* d = fdopendir(dup(fd));
  while (dirent* e = d != nullptr ? readdir(d) : nullptr) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    names.push_back(name);
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".done") == 0) ++done;
  }
  if (d != nullptr) closedir(d);
  if (!why.empty() || keep || done < nodes) return why;
  for (const auto& name : names) {
    // Only this user's regular files: anything else (planted there) stays, and so does
    // the directory then.
    if (fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid())
      unlinkat(fd, name.c_str(), 0);
  }
  rmdir(dir.c_str());
  return "";
}

// The step's crash evidence directory, `leaf` in the user's evidence root of `log_dir`
// (see evidence_root), made when missing and opened: -1 and *why when it cannot be.
// Runs in a child. *dir: its path.
int open_crash_dir(const std::string& log_dir, const std::string& leaf, std::string* dir, std::string* why) {
  const std::string root = evidence_root(log_dir, false, why);
  if (root.empty()) return -1;
  *dir = root + "/" + leaf;
  return open_stacks_dir(*dir, false, why);
}

}  // namespace

std::string resolve_log_dir(const std::string& given) {
  if (!given.empty()) return given;
  if (!env_or_empty("TRAINCTL_LOG_DIR").empty()) return env_or_empty("TRAINCTL_LOG_DIR");
  if (!env_or_empty("SLURM_SUBMIT_DIR").empty()) return env_or_empty("SLURM_SUBMIT_DIR");
  return ".";
}

int zombie_wait_status(pid_t pid) {
  const std::string stat = read_small("/proc/" + std::to_string(pid) + "/stat");
  size_t pos = stat.rfind(')');
  if (pos == std::string::npos || pos + 2 >= stat.size() || stat[pos + 2] != 'Z') return -1;
  // Fields after comm: 3 is the state; exit_code is field 52.
  for (int field = 2; field < 52 && pos != std::string::npos; ++field) pos = stat.find(' ', pos + 1);
  if (pos == std::string::npos) return -1;
  return std::atoi(stat.c_str() + pos + 1);
}

bool live_process_of_mine(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  struct stat st {};
  if (pid <= 0 || stat(dir.c_str(), &st) != 0 || st.st_uid != getuid()) return false;
  const std::string s = read_small(dir + "/stat");
  const size_t pos = s.rfind(')');
  return pos != std::string::npos && pos + 2 < s.size() && s[pos + 2] != 'Z' && s[pos + 2] != 'X';
}

bool is_fault_signal(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGABRT || sig == SIGFPE;
}

node_health::node_health(const supervisor_options& o, log_fn log, hang_fn on_hang)
    : opts_(o), log_(std::move(log)), on_hang_(std::move(on_hang)), log_dir_(resolve_log_dir(o.log_dir)) {
  rules_.timeout = o.hang_timeout;
  rules_.set = o.hang_phase_timeouts;
  // One store per job array (or job): the budgets carry over to its next task.
  const std::string array = env_or_empty("SLURM_ARRAY_JOB_ID");
  if (!o.job_id.empty()) times_path_ = save_times_path(array.empty() ? o.job_id : array);
  training_budget_ = shortest_phase_budget_ = budget_for(rules_, "", 0).budget;
}

node_health::~node_health() {
  for (auto& [pid, w] : ranks_)
    if (w.fd >= 0) close(w.fd);
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

std::string node_health::run_key() const {
  if (opts_.job_id.empty()) return "pid" + std::to_string(self_);
  const std::string restart = env_or_empty("SLURM_RESTART_COUNT");
  return opts_.job_id + "." + (restart.empty() ? "0" : restart);
}

void node_health::started(node_state_file* state, pid_t command) {
  state_ = state;
  command_ = command;
  self_ = getpid();
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  const std::string cmd = read_small("/proc/" + std::to_string(command) + "/cmdline");
  command_is_launcher_ = cmdline_names_launcher(cmd, opts_.launchers);
  next_start_scan_ = clock::now() + milliseconds(1000);
  // The log directory may be on a mount that stalls: looked at in a child.
  child_spec spec;
  const std::string dir = log_dir_;
  // The hang budgets' store (on the shared home, which may stall too): read here.
  const std::string times = opts_.hang_timeout.count() != 0 ? times_path_ : "";
  spec.work = [dir, times] {
    bool group = false;
    std::string why = prepare_log_dir(dir, &group), note;
    if (why.empty()) evidence_root(dir, group, &why, &note);  // made now, and a squatted name said at the start
    std::string out = std::string(group ? "group\n" : "private\n") + (why.empty() ? "" : "problem " + why + "\n") +
                      (note.empty() ? "" : "note " + note + "\n");
    std::string store_why;
    if (!times.empty())
      for (const auto& [name, ms] : longest_recorded_phases(times, &store_why))
        out += "learnt " + name + " " + std::to_string(ms) + "\n";
    if (!store_why.empty()) out += "store " + store_why + "\n";
    return out;
  };
  spec.ignore_signals = opts_.notices;
  spec.ignore_signals.push_back(opts_.graceful_signal);
  check_ = std::make_unique<started_child>(spec);
  check_by_ = clock::now() + milliseconds(10000);
}

bool node_health::owns(pid_t pid) const {
  for (const auto* c : {check_.get(), dump_.get(), evidence_.get(), slow_.get()})
    if (c != nullptr && c->pid() > 0 && (pid == c->pid() || getpgid(pid) == c->pid())) return true;
  return false;
}

void node_health::abandon() {
  if (dump_) dump_->abandon();
  if (check_) check_->abandon();  // the evidence writer is let finish (settle_evidence)
}

bool node_health::reaped(pid_t pid, int status) {
  if (check_ && pid == check_->pid()) {
    const child_result r = check_->finish(status);
    check_.reset();
    log_dir_checked_ = true;
    log_dir_group_ = r.output.compare(0, 6, "group\n") == 0;
    const size_t p = r.output.find("problem ");
    if (p != std::string::npos) log_dir_problem_ = r.output.substr(p + 8, r.output.find('\n', p) - p - 8);
    if (!r.ok()) log_dir_problem_ = "log directory " + log_dir_ + ": the check failed (" + r.error + ")";
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
      char name[40] = {};
      long long ms = 0;
      if (std::sscanf(line.c_str(), "learnt %39s %lld", name, &ms) == 2 && ms > 0) {
        learnt_[name] = recorded_[name] = std::max<std::int64_t>(learnt_[name], ms);
        if (name == std::string(kQuietPhase)) quiet_before_ = ms;
      }
      if (line.compare(0, 5, "note ") == 0) log(line.substr(5));
      if (line.compare(0, 6, "store ") == 0)
        log("hang: the budgets learnt in this job array cannot be read (" + line.substr(6) + "): first-time budgets");
    }
    if (!log_dir_problem_.empty())
      log(log_dir_problem_ + ": hang stacks, slow_nodes and crash evidence will not be saved until it is fixed");
    return true;
  }
  if (evidence_ && pid == evidence_->pid()) {
    const child_result r = evidence_->finish(status);
    evidence_.reset();
    if (!r.output.empty()) log(r.output.substr(0, r.output.find('\n')));
    return true;
  }
  if (slow_ && pid == slow_->pid()) {
    const child_result r = slow_->finish(status);
    slow_.reset();
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) log("straggler: " + line);
    if (!r.ok()) log("straggler: the finding was not recorded: " + r.error);
    return true;
  }
  if (dump_ && pid == dump_->pid()) {
    const child_result r = dump_->finish(status);
    dump_.reset();
    finish_dump(r.output);
    return true;
  }
  return false;
}

std::chrono::milliseconds node_health::tick() {
  const auto now = clock::now();
  if (check_ && now >= check_by_) {
    check_->abandon();
    check_.reset();
    log_dir_checked_ = true;
    log_dir_problem_ = "log directory " + log_dir_ + " did not answer within 10 s (a stalled mount?)";
    log(log_dir_problem_ + ": hang stacks will not be saved");
  }
  if (dump_ && now >= dump_by_) {
    dump_->abandon();
    dump_.reset();
    log("hang: the stack dump took longer than " + format_duration(kDumpLimit) + " and was ended");
    on_hang_("the stack dump did not finish within " + format_duration(kDumpLimit));
  }
  if (slow_ && now >= slow_by_) {
    slow_->abandon();
    slow_.reset();
    log("straggler: the finding was not recorded: the log directory or the home did not answer within " +
        format_duration(kSlowRecordLimit));
  }
  if (dump_) dump_->drain();
  watch_new_ranks();
  record_stragglers();
  on_deaths();
  check_hang();
  check_start();
  // New ranks nudge the supervisor (SIGCHLD) when they take a heartbeat slot; the
  // minute is for ranks of an older libtrainctl, which do not.
  milliseconds wait(kNewRankLook);
  if (opts_.hang_timeout.count() != 0)
    wait = std::min(wait, std::max(milliseconds(1000), std::chrono::duration_cast<milliseconds>(
                                                           std::min(training_budget_, shortest_phase_budget_) / 10)));
  if (opts_.hang_start_timeout.count() > 0 && !all_started_) wait = std::min(wait, milliseconds(1000));
  if (check_) wait = std::min(wait, std::chrono::duration_cast<milliseconds>(check_by_ - now));
  if (dump_ || slow_) wait = std::min(wait, milliseconds(1000));
  return std::max(wait, milliseconds(0));
}

// The ranks of this node are the processes in the node state's heartbeat slots (every
// rank that uses trainctl has one); each is held by a pidfd, which turns readable the
// moment it dies, before its launcher reaps it.
void node_health::watch_new_ranks() {
  if (state_ == nullptr || epoll_fd_ < 0 || !has_header(state_->get())) return;
  for (const auto& b : state_->get().beats) {
    const pid_t pid = b.pid.load(std::memory_order_acquire);
    if (pid <= 0 || pid == self_ || ranks_.count(pid) != 0) continue;
    watched w;
    w.fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    // Opened first, checked second: a pid reused by another user's process is refused.
    if (w.fd >= 0 && !live_process_of_mine(pid)) {
      close(w.fd);
      w.fd = -1;
    }
    if (w.fd >= 0) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = static_cast<std::uint64_t>(pid);
      epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, w.fd, &ev);
    }
    ranks_[pid] = w;
  }
}

void node_health::on_deaths() {
  if (epoll_fd_ < 0) return;
  epoll_event evs[64];
  const int n = epoll_wait(epoll_fd_, evs, 64, 0);
  const std::int64_t now = unix_now_ms();
  for (int i = 0; i < n; ++i) {
    const pid_t pid = static_cast<pid_t>(evs[i].data.u64);
    auto it = ranks_.find(pid);
    if (it == ranks_.end() || it->second.fd < 0) continue;
    // How it ended, while it is a zombie (its launcher has not reaped it yet).
    note_death(pid, now, zombie_wait_status(pid));
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second.fd, nullptr);
    close(it->second.fd);
    it->second.fd = -1;
  }
}

void node_health::trainctl_ended_ranks() {
  on_deaths();  // the deaths that came before, with their own times
  if (caused_since_ms_ == 0) caused_since_ms_ = unix_now_ms();
}

void node_health::note_death(pid_t pid, std::int64_t when_ms, int wait_status) {
  auto& w = ranks_[pid];
  w.died_ms = when_ms;
  w.wait_status = wait_status;
  if (first_dead_ != 0) return;
  first_dead_ = pid;
  first_death_ms_ = when_ms;
  first_death_status_ = wait_status;
  publish_first_death();
}

// The other nodes compare their first deaths with this one: written at once (in a
// child, the log directory may be slow), not when the launcher gets round to exiting.
void node_health::publish_first_death() {
  if (opts_.job_id.empty() || opts_.batch || evidence_ || ending_ || step_nodes() < 2 ||
      (log_dir_checked_ && !log_dir_problem_.empty()))
    return;
  const std::string logs = log_dir_, leaf = evidence_leaf(), me = node_name();
  const std::string line =
      "first_ms=" + std::to_string(first_death_ms_) + " status=" + std::to_string(first_death_status_) + "\n";
  child_spec spec;
  spec.ignore_signals = opts_.notices;
  spec.ignore_signals.push_back(opts_.graceful_signal);
  spec.work = [logs, leaf, me, line]() -> std::string {
    std::string why, dir;
    const int fd = valid_node_name(me) ? open_crash_dir(logs, leaf, &dir, &why) : -1;
    if (fd < 0) return "crash evidence not written: " + (why.empty() ? "'" + me + "' is not a node name" : why) + "\n";
    struct stat st {};
    if (fstatat(fd, me.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) why = append_in_dir(fd, me, line, 0600);
    close(fd);
    return why.empty() ? "" : "crash evidence not written: " + why + "\n";
  };
  evidence_ = std::make_unique<started_child>(spec);
}

// A finding a rank put in its beat since the last look: written here, in a child (the
// log directory and the home may stall), one child at a time; a finding that comes
// while one is written waits for the next tick. A straggler is rare: a handful a run.
void node_health::record_stragglers() {
  if (state_ == nullptr || slow_ || !has_header(state_->get())) return;
  std::vector<straggler_finding> found;
  for (const auto& b : state_->get().beats) {
    const pid_t pid = b.pid.load(std::memory_order_acquire);
    const std::int64_t reports = b.slow_reports.load(std::memory_order_acquire);
    if (pid <= 0 || reports <= 0 || ranks_.count(pid) == 0) continue;  // only this node's watched ranks
    std::int64_t& seen = slow_seen_[pid];
    if (reports <= seen) continue;
    seen = reports;
    straggler_finding f;
    f.rank = b.rank.load(std::memory_order_relaxed);
    f.job = opts_.job_id;
    f.step = b.slow_step.load(std::memory_order_relaxed);
    f.slow_us = b.slow_us.load(std::memory_order_relaxed);
    f.fastest_us = b.fastest_us.load(std::memory_order_relaxed);
    if (f.slow_us > 0 && f.fastest_us > 0) found.push_back(f);
  }
  if (found.empty()) return;
  const std::string dir = log_dir_checked_ && !log_dir_problem_.empty() ? "" : log_dir_;
  child_spec spec;
  spec.ignore_signals = opts_.notices;
  spec.ignore_signals.push_back(opts_.graceful_signal);
  spec.work = [found, dir]() -> std::string {
    std::string out;
    for (const auto& f : found) {
      std::istringstream said(record_straggler(f, dir));
      for (std::string line; std::getline(said, line);) out += "rank " + std::to_string(f.rank) + ": " + line + "\n";
    }
    return out;
  };
  slow_ = std::make_unique<started_child>(spec);
  slow_by_ = clock::now() + kSlowRecordLimit;
}

// The phase a beat slot shows, by name: "" training, "save", or the loop's name.
std::string node_health::phase_name(std::int32_t phase) const {
  if (phase == kPhaseTraining || state_ == nullptr) return "";
  if (phase == kPhaseSave) return "save";
  const int i = phase - kPhaseNamed;
  if (i < 0 || i >= kMaxPhases) return "?";  // past the node state's table: nothing learnt
  const phase_slot& slot = state_->get().phases[i];
  if (slot.state.load(std::memory_order_acquire) != 2) return "?";
  return std::string(slot.name, strnlen(slot.name, sizeof slot.name));
}

// What the ranks of this node measured (the node state's longest save, quiet time and
// phases) raises the budgets; a longer one than the store knows is recorded for the
// next task by the node's publisher.
void node_health::learn_budgets() {
  const node_state& ns = state_->get();
  std::vector<std::pair<std::string, std::int64_t>> seen{{"save", ns.longest_save_ms.load()},
                                                         {kQuietPhase, ns.longest_quiet_ms.load()}};
  for (const phase_slot& slot : ns.phases)
    if (slot.state.load(std::memory_order_acquire) == 2)
      seen.emplace_back(std::string(slot.name, strnlen(slot.name, sizeof slot.name)), slot.longest_ms.load());
  for (const auto& [name, ms] : seen) {
    if (ms <= learnt_[name] || ms >= std::int64_t{7} * 24 * 3600 * 1000) continue;
    learnt_[name] = ms;
    // --graceful-exit=auto records saves itself; only the node's publisher writes.
    const bool records = records_ && records_() && !times_path_.empty() &&
                         !(name == "save" && opts_.graceful_exit == option::kGracefulExitAuto);
    if (!records || ms <= recorded_[name]) continue;
    const std::string why = record_phase_time(times_path_, opts_.job_id, node_name(), name, ms);
    if (why.empty())
      recorded_[name] = ms;
    else
      log("hang: cannot keep the " + (name == kQuietPhase ? std::string("training") : name) +
          " time for the next task: " + why);
  }
  training_budget_ = budget_for(rules_, "", quiet_before_).budget;
  shortest_phase_budget_ = training_budget_;
  for (const auto& [name, ms] : learnt_)
    if (name != kQuietPhase)
      shortest_phase_budget_ = std::min(shortest_phase_budget_, budget_for(rules_, name, ms).budget);
}

// The budget of a phase, said in the log the first time a rank is seen in it with this
// budget (a learnt budget grows, and is said again).
hang_budget node_health::budget_of(const std::string& name) {
  hang_budget out =
      name == "?" ? hang_budget{std::max(training_budget_, kFirstPhaseBudget), "a phase past the node state's table"}
                  : budget_for(rules_, name, name.empty() ? quiet_before_ : learnt_[name]);
  std::int64_t& said = budget_said_[name];
  if (said != out.budget.count() && !(name.empty() && opts_.hang_timeout.count() > 0)) {
    said = out.budget.count();
    log("hang: a rank " +
        (name.empty()     ? std::string("training")
         : name == "save" ? "saving"
                          : "in phase '" + name + "'") +
        " counts as hung after " + format_duration(out.budget) + " (" + out.why + ")");
  }
  return out;
}

// A rank quiet for longer than its phase's budget is hung: training ranks after
// --hang-timeout without an agreement, a rank inside a save or a marked phase after that
// phase's budget (it is quiet since its last agreement or phase change, whichever is
// later). Its peers block in the next collective soon after, in the same phase (a save
// is decided on every rank at once; a marked phase is marked on every rank), so every
// node's supervisor finds its own ranks hung at about the same time.
void node_health::check_hang() {
  if (opts_.hang_timeout.count() == 0 || state_ == nullptr || !has_header(state_->get())) return;
  learn_budgets();
  const std::int64_t now = unix_now_ms();
  const rank_beat* stale = nullptr;
  std::int64_t oldest = now, over_budget = 0;
  std::string stale_phase;
  hang_budget stale_budget;
  bool fresh = false;  // some rank made progress within its budget since the hang was found
  for (const auto& b : state_->get().beats) {
    const std::int32_t pid = b.pid.load(std::memory_order_acquire);
    const std::int32_t phase = b.phase.load(std::memory_order_acquire);
    const std::int64_t since = clocks_of(b.beat_ms.load(std::memory_order_relaxed), phase == kPhaseTraining,
                                         b.phase_ms.load(std::memory_order_relaxed))
                                   .hang_clock;
    if (pid <= 0 || since <= 0) continue;  // not started: check_start judges it
    const std::string name = phase_name(phase);
    const hang_budget budget = budget_of(name);
    const std::int64_t quiet = now - since;
    if (since > hung_since_ms_ && quiet <= budget.budget.count()) fresh = true;
    if (quiet <= budget.budget.count() || quiet - budget.budget.count() <= over_budget) continue;
    // An exited rank its launcher has not reaped yet is no hang, nor is a pid that
    // now names another user's process.
    if (!live_process_of_mine(pid)) continue;
    over_budget = quiet - budget.budget.count();
    oldest = since;
    stale = &b;
    stale_phase = name;
    stale_budget = budget;
  }
  if (stale == nullptr) {
    // Over when the ranks make progress again; not when they are gone (end-step, an exit).
    if (hung_ && !dump_ && fresh) {
      log("hang: the ranks make progress again");
      hung_ = false;
    }
    return;
  }
  if (hung_ || dump_) return;
  const std::string who =
      "rank " + std::to_string(stale->rank.load()) + " (pid " + std::to_string(stale->pid.load()) + ")";
  char quiet[32];
  std::snprintf(quiet, sizeof quiet, "%.1f s", static_cast<double>(now - oldest) / 1000.0);
  const std::string step = std::to_string(stale->step.load());
  std::string why;
  if (stale_phase.empty())
    why = who + " has not reached an agreement for " + std::string(quiet) + " (last at step " + step + ")";
  else
    why = who + " has been " + (stale_phase == "save" ? std::string("saving") : "in phase '" + stale_phase + "'") +
          " for " + quiet + ", past its budget of " + format_duration(stale_budget.budget) + " (" + stale_budget.why +
          "; last agreement at step " + step + ")";
  stall_ms_ = now - oldest;
  start_dump(why, oldest, stale_phase.empty() ? "" : stale_phase == "save" ? "saving" : "in phase " + stale_phase);
}

// Before the first agreement (process group init, rendezvous, the first data load)
// there is no heartbeat to go stale: a rank process that has been running for
// --hang-start-timeout without one is hung. Looked for until every rank found has
// reached its first agreement.
void node_health::check_start() {
  if (opts_.hang_start_timeout.count() == 0 || all_started_ || hung_ || dump_ || clock::now() < next_start_scan_)
    return;
  next_start_scan_ = clock::now() + std::max(milliseconds(1000),
                                             std::chrono::duration_cast<milliseconds>(opts_.hang_start_timeout / 10));
  std::map<pid_t, rank_clocks> clocks;
  if (state_ != nullptr && has_header(state_->get()))
    for (const auto& b : state_->get().beats)
      clocks[b.pid.load()] = clocks_of(b.beat_ms.load(std::memory_order_relaxed),
                                       b.phase.load(std::memory_order_acquire) == kPhaseTraining,
                                       b.phase_ms.load(std::memory_order_relaxed));
  double uptime = 0;
  std::ifstream("/proc/uptime") >> uptime;
  const long hz = sysconf(_SC_CLK_TCK);
  bool all = true, any = false;
  for (const auto& r : find_rank_procs(self_, opts_.launchers, !opts_.batch)) {
    if (owns(r.pid) || (owned_elsewhere_ && owned_elsewhere_(r.pid)) || !live_process_of_mine(r.pid)) continue;
    any = true;
    const rank_clocks c = clocks.count(r.pid) != 0 ? clocks[r.pid] : rank_clocks{};
    if (c.agreed) continue;
    all = false;
    if (c.started) continue;  // inside a phase before its first agreement: check_hang judges it
    double age_s = uptime - static_cast<double>(r.start_time) / static_cast<double>(hz);
    if (c.start_clock > 0)  // from the end of a phase it marked before its first agreement
      age_s = std::min(age_s, static_cast<double>(unix_now_ms() - c.start_clock) / 1000.0);
    if (age_s * 1000 < static_cast<double>(opts_.hang_start_timeout.count())) continue;
    const std::string rank = proc_environ_value(r.pid, "RANK");
    start_dump("rank " + (rank.empty() ? "?" : rank) + " (pid " + std::to_string(r.pid) +
                   ") has not reached its first agreement " +
                   format_duration(milliseconds(std::int64_t(age_s * 1000))) + " after it started",
               unix_now_ms() - static_cast<std::int64_t>(age_s * 1000), "");
    stall_ms_ = static_cast<std::int64_t>(age_s * 1000);
    return;
  }
  all_started_ = any && all;
}

void node_health::start_dump(const std::string& why, std::int64_t stall_began_ms, const std::string& doing) {
  hung_ = true;
  hung_since_ms_ = unix_now_ms();
  log("hang: " + why + "; taking every rank's stacks");
  const std::string logs = log_dir_;
  const std::string leaf = "stacks-" + (opts_.job_id.empty() ? "pid" + std::to_string(self_) : opts_.job_id);
  // What the child needs, copied: it runs with this process's memory as it is now.
  const std::string problem = log_dir_checked_ ? log_dir_problem_ : "";
  const bool group = log_dir_group_;
  const pid_t root = self_;
  const std::string run = run_key();
  const std::string state_dir_path =
      state_ != nullptr ? state_->path().substr(0, state_->path().rfind('/')) : state_dir();
  const milliseconds timeout(stall_ms_);
  const auto launchers = opts_.launchers;
  const bool command_is_rank = !opts_.batch;
  // The supervisor's helpers are no ranks: the hook, the query, node health's own.
  const auto elsewhere = owned_elsewhere_;
  const std::function<bool(pid_t)> excluded = [this, elsewhere](pid_t p) {
    return owns(p) || (elsewhere && elsewhere(p));  // `this` is the child's copy
  };
  const std::string job = opts_.job_id;
  child_spec spec;
  spec.ignore_signals = opts_.notices;
  spec.ignore_signals.push_back(opts_.graceful_signal);
  spec.work = [=]() -> std::string {
    std::ostringstream out;
    const auto t0 = clock::now();
    std::vector<proc_info> ranks;
    for (const auto& r : find_rank_procs(root, launchers, command_is_rank))
      if (r.pid != getpid() && !excluded(r.pid) && live_process_of_mine(r.pid)) ranks.push_back(r);
    std::string why_not = problem;
    const std::string root = why_not.empty() ? evidence_root(logs, group, &why_not) : "";
    const std::string dir = root + "/" + leaf;
    const int fd = why_not.empty() ? open_stacks_dir(dir, group, &why_not) : -1;
    if (fd < 0) {
      // No files to count the other nodes by: give them the time to find the hang too
      // (their heartbeats went stale with ours) before the action ends this node's ranks.
      std::this_thread::sleep_for(kNoDumpGrace);
      out << "log hang: stacks not saved: " << why_not << "\n";
      out << "summary stacks not saved (" << why_not << ")\n";
      return out.str();
    }
    // The first node's job-wide line for this hang comes after every node's dump, so
    // after this count.
    const std::size_t job_lines_before = job_wide_summaries(fd);
    dump_options o;
    o.out_dir = dir;
    o.dir_fd = fd;
    o.file_mode = group ? 0640 : 0600;
    o.id = {run, "hang", unix_now_ms()};
    o.python_dir = state_dir_path;
    o.stack_signal = stack_signal_from_env();
    o.reason = "hang: " + why;
    const auto stacks = dump_stacks(ranks, o);
    std::size_t saved = 0;
    for (const auto& s : stacks) {
      if (!s.file.empty()) ++saved;
      if (!s.error.empty()) out << "log hang: stacks of rank " << s.rank << " not saved: " << s.error << "\n";
    }
    // The summary says what the ranks were doing when a phase's budget ran out.
    const std::string doing_text = doing.empty() ? "" : " (" + doing + ")";
    std::string summary = summarize(stacks) + doing_text;
    const auto ms = std::chrono::duration_cast<milliseconds>(clock::now() - t0).count();
    out << "log hang: stacks of " << saved << " of " << stacks.size() << " rank" << (stacks.size() == 1 ? "" : "s")
        << " saved in " << dir << "/ after " << ms << " ms: " << summary << "\n";
    // Every node waits for the whole job's files before anyone acts (end-step would
    // otherwise take the ranks of a node that has not dumped yet); the first node then
    // says where the whole job is stuck.
    int world = 0;
    if (!ranks.empty()) world = std::atoi(proc_environ_value(ranks[0].pid, "WORLD_SIZE").c_str());
    if (world == 0) world = std::atoi(env_or_empty("SLURM_NTASKS").c_str());
    const std::int64_t since = stall_began_ms - timeout.count() - 60000;
    if (world == 0) std::this_thread::sleep_for(kNoDumpGrace);  // nothing to count by
    std::vector<rank_stack> all = read_dumps(fd, run, "hang", since);
    for (auto end = clock::now() + kJobDumpWait; static_cast<int>(all.size()) < world && clock::now() < end;) {
      std::this_thread::sleep_for(milliseconds(200));
      all = read_dumps(fd, run, "hang", since);
    }
    const std::string node = env_or_empty("SLURM_NODEID");
    if ((node.empty() || node == "0") && world > static_cast<int>(stacks.size())) {
      summary = summarize(all) + doing_text;
      out << "log hang: the whole job (" << all.size() << " of " << world << " ranks dumped): " << summary << "\n";
      for (const auto& h : suspect_hosts(all)) {
        bad_node b;
        b.when = unix_now_ms() / 1000;
        b.host = h;
        b.job = job.empty() ? "-" : job;
        b.reason = "hung (holds the ranks stuck elsewhere than most; stacks in " + dir + ")";
        const std::string path = bad_nodes_path(), err = record_bad_node(path, b);
        out << "log "
            << (err.empty() ? "remembered " + h + " as a bad node (" + b.reason + ") in " + path
                            : "could not remember " + h + " as a bad node: " + err)
            << "\n";
      }
    }
    // One job-wide line per hang, from the first node; another node's line says whose view it is.
    const bool job_wide = node.empty() || node == "0" || world <= static_cast<int>(stacks.size());
    const std::string line = job_wide ? summary : "only " + node_name() + "'s ranks (node " + node + "): " + summary;
    const std::string why_summary = append_in_dir(fd, "summary.txt", timed_line(line), o.file_mode);
    if (!why_summary.empty()) out << "log hang: " << why_summary << "\n";
    if (!job_wide)
      for (auto end = clock::now() + kJobLineWait; job_wide_summaries(fd) <= job_lines_before && clock::now() < end;)
        std::this_thread::sleep_for(milliseconds(100));
    close(fd);
    out << "summary " << summary << "\n";
    return out.str();
  };
  dump_ = std::make_unique<started_child>(spec);
  dump_by_ = clock::now() + kDumpLimit;
  if (!dump_->error().empty()) {
    log("hang: cannot take the stacks: " + dump_->error());
    dump_.reset();
    on_hang_("stacks not taken");
  }
}

void node_health::finish_dump(const std::string& output) {
  std::istringstream in(output);
  std::string summary = "the stack dump printed nothing";
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, 4, "log ") == 0) log(line.substr(4));
    if (line.compare(0, 8, "summary ") == 0) summary = line.substr(8);
  }
  on_hang_(summary);
}

// One per job step and run: the steps of one job (and its requeued runs) crash apart.
std::string node_health::evidence_leaf() const {
  const std::string step = env_or_empty("SLURM_STEP_ID");
  return "crash-" + run_key() + "." + (step.empty() ? "batch" : step);
}

// The evidence writer started at this node's first death, given a moment to finish: it
// is this node's line for the others (killing it could leave half a line), and a helper
// still running at the end would be counted as a process the command left behind.
void node_health::settle_evidence() {
  if (!evidence_) return;
  for (int i = 0; i < 40; ++i) {
    int status = 0;
    const pid_t pid = evidence_->pid();
    if (pid <= 0 || waitpid(pid, &status, WNOHANG) == pid) {
      reaped(pid, status);
      return;
    }
    std::this_thread::sleep_for(milliseconds(50));
  }
  evidence_->abandon();
  evidence_.reset();
}

// srun sends a step's other tasks TERM within seconds of a failed task's end, which comes
// at most about half a minute after that task's first rank death (torchrun gives a node's
// other workers 30 s to stop). A TERM later than this is something else, a time limit, a
// preemption or scancel, whatever died before it: CI saw a test's scancel 294 s after a
// rank's failed start called "srun --kill-on-bad-exit". Named that, a preemption's ranks
// save with the wrong reason, and the report counts the wrong loss.
constexpr std::int64_t kPeerTermWindowMs = 120000;

std::string node_health::peer_death() const {
  if (opts_.job_id.empty() || opts_.batch || step_nodes() < 2 || (log_dir_checked_ && !log_dir_problem_.empty()))
    return "";
  const std::string logs = log_dir_, leaf = evidence_leaf(), me = node_name();
  child_spec spec;
  spec.deadline = milliseconds(1000);
  spec.ignore_signals = opts_.notices;
  spec.work = [logs, leaf, me]() -> std::string {
    std::string why;
    const std::string root = evidence_root(logs, false, &why);
    if (root.empty()) return "";
    // Not created here: a step nobody's rank has ended in has no evidence yet.
    const std::string dir = root + "/" + leaf;
    const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_uid != getuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      if (fd >= 0) close(fd);
      return "";
    }
    const std::int64_t now = unix_now_ms();
    std::int64_t first = -1;
    int status = -1;
    std::string who;
    // A peer that finished (exit 0) is no failure; an unknown end (-1) may be one. A
    // death long before the TERM did not bring it.
    auto may_have_brought_the_term = [now](const node_death& n) {
      return n.status != 0 && n.first_ms <= now && now - n.first_ms <= kPeerTermWindowMs;
    };
    for (const node_death& n : other_deaths(fd, me)) {
      if (!may_have_brought_the_term(n) || (first >= 0 && n.first_ms >= first)) continue;  // the earliest
      first = n.first_ms;
      status = n.status;
      who = n.node;
    }
    close(fd);
    if (first < 0) return "";
    return "a rank on " + who + " ended with " + how_it_ended(status) + " " + to_ms_text(now - first) + " before";
  };
  const child_result r = run_child(spec);
  return r.ok() ? r.output : "";
}

// The culprit rule (see the header). Runs once, after the command ended; on a step of
// several nodes it also says this node is done with the step's crash evidence, which the
// last node removes when nobody was blamed.
void node_health::command_ended(int status) {
  on_deaths();
  ending_ = true;  // from here on this node's own line is written below, not by a child
  settle_evidence();
  if (opts_.batch || opts_.job_id.empty()) return;
  const bool failed = (WIFEXITED(status) && WEXITSTATUS(status) != 0) || WIFSIGNALED(status);
  const int nodes = step_nodes();
  bool judge = failed;
  const bool caused = caused_since_ms_ != 0 && (first_dead_ == 0 || first_death_ms_ >= caused_since_ms_);
  if (judge && (caused || hung_)) {
    log("crash: not judged: trainctl itself told the ranks to stop or ended them");
    judge = false;
  }
  // The command itself is the rank (srun python train.py): its own status is exact.
  if (judge && first_dead_ == 0 && !command_is_launcher_) note_death(command_, unix_now_ms(), status);
  if (judge && first_dead_ == command_) first_death_status_ = status;
  if (judge && first_dead_ == 0) {
    log("crash: no rank death was seen on this node (its ranks do not use trainctl): no node is blamed");
    judge = false;
  }
  // A truncated node state faults in every process that maps it: a rank that died of
  // that SIGBUS (its guard displaced, or a program of its own) tells nothing of the node.
  if (judge && first_death_status_ >= 0 && WIFSIGNALED(first_death_status_) &&
      WTERMSIG(first_death_status_) == SIGBUS) {
    const std::string damage = !state_damage_.empty() ? state_damage_ : state_ != nullptr ? state_->damage() : "";
    if (!damage.empty()) {
      log("crash: not judged: the first rank death on this node was SIGBUS, and the " + damage +
          ": trainctl's own state, no fault of the node");
      judge = false;
    }
  }
  if (!log_dir_problem_.empty()) {
    if (judge) log("crash: not judged: " + log_dir_problem_);
    return;
  }
  if (!judge && nodes < 2) return;
  const std::string logs = log_dir_, leaf = evidence_leaf(), me = node_name();
  const std::int64_t mine = first_death_ms_;
  const int st = first_death_status_;
  const pid_t pid = first_dead_;
  const std::int64_t skew = clock_skew_ms();
  const std::string job = opts_.job_id;
  child_spec spec;
  spec.deadline = kEvidenceWait + milliseconds(7000);
  spec.ignore_signals = opts_.notices;
  spec.work = [=]() -> std::string {
    std::ostringstream out;
    std::string why, dir;
    const int fd = valid_node_name(me) ? open_crash_dir(logs, leaf, &dir, &why) : -1;
    if (fd < 0) {
      if (judge) out << "crash: not judged: " << (why.empty() ? "'" + me + "' is not a node name" : why) << "\n";
      return out.str();
    }
    bool blamed = false;
    if (judge) blamed = judge_first_death(fd, me, mine, st, pid, skew, job, nodes < 2, out);
    why = nodes >= 2 ? close_evidence(fd, dir, me, nodes, blamed) : "";
    if (nodes < 2 && !blamed) {  // one node: nothing to compare with, nothing kept
      unlinkat(fd, me.c_str(), 0);
      rmdir(dir.c_str());
    }
    close(fd);
    if (!why.empty()) out << "crash evidence: " << why << "\n";
    return out.str();
  };
  const child_result r = run_child(spec);
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) log(line);
  if (!r.finished) log(std::string(judge ? "crash: not judged: " : "crash evidence: ") + r.error);
}

// Whether this node's first rank death makes it the culprit (see the header); writes
// this node's line when the death was not published yet, and what it found to `out`.
// Runs in the judging child.
bool node_health::judge_first_death(int fd, const std::string& me, std::int64_t mine, int st, pid_t pid,
                                    std::int64_t skew, const std::string& job, bool alone, std::ostringstream& out) {
  struct stat own {};
  std::string err;  // written at the death already, unless the command itself was the rank
  if (fstatat(fd, me.c_str(), &own, AT_SYMLINK_NOFOLLOW) != 0)
    err = append_in_dir(fd, me, "first_ms=" + std::to_string(mine) + " status=" + std::to_string(st) + "\n", 0600);
  const bool fault = st >= 0 && WIFSIGNALED(st) && is_fault_signal(WTERMSIG(st));
  if (!fault) {
    out << "crash: the first rank to end on this node (pid " << pid << ") ended with " << how_it_ended(st)
        << (st < 0 ? " (its launcher reaped it before trainctl could read how)" : ", not a fault of the node")
        << ": no node is blamed\n";
    return false;
  }
  std::this_thread::sleep_for(kEvidenceWait);  // the other nodes' first deaths
  std::int64_t next_other = -1;
  std::string closest;
  for (const node_death& n : other_deaths(fd, me)) {
    if (next_other >= 0 && n.first_ms >= next_other) continue;
    next_other = n.first_ms;
    closest = n.node;
  }
  if (next_other >= 0 && next_other <= mine + skew) {
    out << "crash: rank pid " << pid << " on this node died by " << how_it_ended(st) << ", but a rank on " << closest
        << " ended "
        << (mine - next_other >= 0 ? to_ms_text(mine - next_other) + " before it"
                                   : to_ms_text(next_other - mine) + " after it")
        << " (within the " << skew << " ms allowed for clock skew): no node is blamed\n";
    return false;
  }
  const std::string lead = next_other < 0
                               ? "no other node's rank died"
                               : "the next node (" + closest + ") " + to_ms_text(next_other - mine) + " later";
  bad_node b;
  b.when = mine / 1000;
  b.host = me;
  b.job = job;
  b.gpus = gpu_uuids();
  b.reason = "crashed (" + how_it_ended(st) + " in a rank, the first death of the job; " + lead + ")";
  if (alone) {  // nothing to compare with: the program's fault as likely as the node's
    // The array names the program: its tasks crashing on one node (SLURM's pick on an
    // idle cluster) are one program's crashes, no evidence against the node.
    const std::string array = env_or_empty("SLURM_ARRAY_JOB_ID");
    b.reason = std::string(kSuspectedCrash) + " (" + how_it_ended(st) + " in a rank of a one-node job" +
               (array.empty() ? "" : std::string(kOfArray) + array) +
               "; a node is kept off only when crashes of other programs follow it)";
  }
  const std::string path = bad_nodes_path(), e2 = record_bad_node(path, b);
  const std::string as = alone ? " as a suspect (" : " as a bad node (";
  out << (e2.empty() ? "remembered " + me + as + b.reason + ") in " + path
                     : "could not remember " + me + as.substr(0, as.size() - 2) + ": " + e2)
      << "\n";
  if (!err.empty()) out << "crash: " << err << "\n";
  return e2.empty();
}

}  // namespace trainctl
