#include "trainctl/controller.hpp"
#include "log_line.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fcntl.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>

#include "bad_nodes.hpp"
#include "config_impl.hpp"
#include "gpu_memory.hpp"
#include "node_role.hpp"
#include "node_state.hpp"
#include "run_events.hpp"
#include "signals.hpp"
#include "step_times.hpp"
#include "straggler_record.hpp"
#include "switch_paths.hpp"

namespace trainctl {
namespace {

// Vote layout: one element per exit reason (0/1), the step times, the freshest EndTime
// read, then one token per switch. The step times ride in the same MAX reduction: the
// slowest rank's work per step (with its rank in the low bits, so the maximum also names
// it) and the negated fastest (so the maximum is the minimum); so does the EndTime news
// (pack_end_news: the maximum is the latest read).
enum vote_index : std::size_t {
  kVoteDeadline = 0,
  kVotePreempted = 1,
  kVoteSignal = 2,
  kVoteMemory = 3,
  kVoteSlowest = 4,
  kVoteNegFastest = 5,
  kVoteHang = 6,
  kVotePeer = 7,
  kVoteEndTime = 8,
  kVoteNoProgress = 9,
  kVoteSwitch0 = 10
};
constexpr std::size_t kMaxLocalSwitches = kVoteLen - kVoteSwitch0;
constexpr int kRankBits = 20;  // ranks below 2^20 are named; larger ones are not reported
constexpr std::int64_t kNoTime = std::numeric_limits<std::int64_t>::min();

// A node's EndTime and the time its supervisor read it, in one vote element: seconds
// since kNewsEpochS, the read's above the low 32 bits and EndTime's in them, so that the
// MAX of the ranks' elements is the latest read (ties: the later EndTime). 0: none.
constexpr std::int64_t kNewsEpochS = 1'700'000'000;  // 2023-11-14; fits until 2091
std::int64_t pack_end_news(std::int64_t end_ms, std::int64_t read_ms) {
  const std::int64_t read_s = read_ms / 1000 - kNewsEpochS, end_s = end_ms / 1000 - kNewsEpochS;
  if (end_ms <= 0 || read_ms <= 0 || read_s <= 0 || end_s <= 0 || read_s >= (std::int64_t{1} << 31) ||
      end_s >= (std::int64_t{1} << 32))
    return 0;
  return (read_s << 32) | end_s;
}

std::int64_t clock_us(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}
// Step times need the fine clock: a coarse one ticks every 1-4 ms, as long as a short
// step. The heartbeat takes the coarse one (a few ns instead of ~20): hang timeouts
// are minutes.
std::int64_t steady_us() { return clock_us(CLOCK_MONOTONIC); }

pid_t parent_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos || paren + 4 > text.size()) return 0;
  return static_cast<pid_t>(std::strtol(text.c_str() + paren + 4, nullptr, 10));  // ") S PPID"
}

bool is_ancestor(pid_t pid) {
  pid_t p = getppid();
  for (int depth = 0; depth < 8 && p > 1; ++depth, p = parent_of(p))
    if (p == pid) return true;
  return false;
}

// The supervisor named by TRAINCTL_SUPERVISOR_PID, held by a pidfd (readable when it
// dies), if it is an ancestor of this process: a variable inherited from elsewhere,
// naming some other process, is ignored. -1 when there is none.
int open_supervisor_pidfd() {
  const char* env = std::getenv("TRAINCTL_SUPERVISOR_PID");
  const long pid = env != nullptr ? std::strtol(env, nullptr, 10) : 0;
  if (pid <= 1 || !is_ancestor(static_cast<pid_t>(pid))) return -1;
  const int fd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  if (fd >= 0 && !is_ancestor(static_cast<pid_t>(pid))) {  // it died and the pid was reused meanwhile
    close(fd);
    return -1;
  }
  if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
  return fd;
}

// How many ranks the launcher says there are (the first variable set, as for the rank).
long world_size() {
  for (const char* name : {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0') return std::strtol(v, nullptr, 10);
  }
  return 1;
}

}  // namespace

struct local_switch {
  bool exit;
  std::string name;
  std::string path;
  int slot = -1;             // index in the node state, -1 when it could not register
  std::int64_t initial = 0;  // token seen by this process at registration
  // Save switches count touches (the node state's slot count): this process has saved
  // for `consumed` of them, and knows of at least `floor` (a file present at its start
  // that the node's publisher has not counted yet).
  std::int64_t consumed = 0;
  std::int64_t floor = 0;
};

struct controller::impl {
  config::impl cfg;
  std::unique_ptr<node_state_file> file;      // the shared node state (kept mapped to the end), and
  std::unique_ptr<node_state> private_state;  // a private one when it fails or is damaged
  std::atomic<node_state*> ns{nullptr};       // the one in use (the hot path's one load)
  std::atomic<std::uint32_t> local_bits{0};
  std::atomic<std::int64_t> local_deadline_ms{0};
  std::uint64_t signal_mask = 0;
  // When this rank first caught a notice signal while supervised (steady us; 0: none).
  mutable std::atomic<std::int64_t> signal_caught_us{0};
  // Whether a notice signal this rank caught counts as its own exit reason now.
  bool caught_signal_counts() const noexcept;
  // The switches belong to the rank's thread (check, should_save, add_switch); the
  // watcher takes them only to fall back to a private state and to remove a consumed
  // save switch. The hot path (should_exit) never takes the lock.
  mutable std::recursive_mutex switches_mu;
  std::vector<local_switch> switches;
  std::atomic<std::int64_t> remove_save_at_ms{0};  // rank 0: when the watcher removes the consumed file
  decision decided;                                // sticky exit
  rank_beat* beat = nullptr;                       // this process's heartbeat in the node state
  std::int64_t save_started_us = 0;                // when a save or exit was decided, until the next call
  // The phases the loop opened (phase_begin), innermost last: the beat's phase value and
  // when it began; the beat shows the innermost, or a save trainctl asked for.
  std::vector<std::pair<std::int32_t, std::int64_t>> open_phases;
  // Where in open_phases a phase named "restore" sits (the loop loading its checkpoint):
  // its end is a run event, the report's checkpoint restore. SIZE_MAX: none open.
  std::size_t restore_at = SIZE_MAX;
  std::int64_t quiet_since_ms = 0;  // the last agreement or phase change of this rank (unix ms)
  std::int64_t last_check_ms = 0;   // the last check() (unix ms, coarse; 0: none)
  bool phase_slots_full_said = false;
  bool exit_save_timed = false;      // the save at the exit decision is being (or was) timed
  std::int64_t window_start_us = 0;  // when the last agreement returned (0: none yet)
  std::int64_t window_start_step = 0;
  std::int64_t work_us = 0;    // work per step in the window that ended at the last vote
  bool window_timed = false;   // this rank put its work in the vote that ends the window
  bool window_marked = false;  // that work was the compute the loop marked
  // Rank 0's step times (median + 3 MAD outliers for `trainctl report`): the window since
  // the last agreement, and whether a save or a marked phase ran in it (not a step's time).
  std::int64_t steps_window_us = 0, steps_window_step = 0;
  bool steps_window_busy = false;
  step_times step_time_counts;
  // Marked compute (compute_begin/end, any thread): the open section's start and the
  // total so far, and the total when the current agreement window began.
  std::atomic<std::int64_t> compute_open_us{0};
  std::atomic<std::int64_t> compute_total_us{0};
  std::int64_t window_compute_us = 0;
  int straggler = -1;  // the rank found slowest at the last agreements, and
  int strikes = 0;     // in how many agreements in a row
  // The straggler last reported, until as many agreements in a row as it takes to report
  // one have not found it slow: one even window (a fast rank descheduled on a loaded
  // node) does not end its episode, nor report it again.
  int reported_straggler = -1, calm = 0;
  int wake_fd = -1;
  int supervisor_fd = -1;              // pidfd of this rank's supervisor, -1: none known
  std::int64_t known_deadline_ms = 0;  // the node state's deadline as last read intact (watcher only)
  std::atomic<bool> stop{false};
  std::thread watcher;
  // Rank 0's events for `trainctl report` (run_events.hpp): queued by the rank's thread,
  // appended by the watcher, so a slow or stalled home never holds up a step.
  std::string events_path, events_job;
  std::mutex events_mu;
  std::string events_pending;
  std::string events_problem;                   // the last append's failure, said once
  std::vector<straggler_finding> slow_pending;  // for the watcher to record (no supervisor), under events_mu
  bool first_step_noted = false;
  std::int64_t last_step = -1;
  std::atomic<std::uint32_t> noticed_flags{0};  // the notices noted so far
  bool supervised = false;                      // a supervisor was there at the start (set before the watcher starts)

  explicit impl(const config::impl& c) : cfg(c) {}
  void open_state();
  void register_switch(bool exit, const std::string& name, const std::string& path);
  void watch_loop();
  node_state& state() const { return *ns.load(std::memory_order_acquire); }
  // Exit switches: the file's mtime while it exists. Save switches: touches seen.
  // A state without its header (overwritten) lends no slot: junk would read as touches.
  std::int64_t token_of(const local_switch& s) const {
    const node_state& n = state();
    // Only a slot that still holds this switch: junk over it (damage the watcher has
    // not seen yet) must not read as a touch or a kill switch.
    const bool slot =
        s.slot >= 0 && has_header(n) && n.slots[s.slot].state.load(std::memory_order_acquire) == 2 &&
        n.slots[s.slot].kind == static_cast<std::uint32_t>(s.exit ? switch_kind::exit : switch_kind::save);
    if (!s.exit) return std::max(s.floor, slot ? n.slots[s.slot].count.load(std::memory_order_acquire) : 0);
    std::int64_t t = s.initial;
    if (slot) t = std::max(t, n.slots[s.slot].token.load(std::memory_order_acquire));
    return t;
  }
  // Removes a save switch once this node has counted the file as it is now and every
  // touch counted here was saved for. False: this node has not counted it yet (another
  // node's view brought the agreement, or NFS shows the file late): try again later.
  bool remove_consumed(const local_switch& s) const;
  void retry_removal_soon();
  // Marks the save switches in the vote `r` as consumed; true when one asks for a save
  // now. Agreed (r is the reduction): every rank saves for all touches any rank saw.
  // Not agreed: once per touch, one touch per call, so every rank saves as often as
  // there were touches however its steps fall. Never touches the exit decision.
  bool consume_saves(std::int64_t step, const std::int64_t* r, decision& d, bool agreed);
  decision decide(std::int64_t step, const std::int64_t* r, bool agreed);
  // The watcher's duties besides publishing: the node state's health, the role, the
  // supervisor's life, the deadline. Called on every wake of the watcher thread.
  void look_after_state(std::unique_ptr<node_role>& role, const publisher_options& popts);
  void fall_back_to_private(const std::string& why);
  void on_supervisor_gone();
  void fill_vote(std::int64_t* v, std::size_t len) const;
  void learn_end_news(std::int64_t news);
  // The save that began at the decision ends now: its length into the node state, where
  // the supervisor learns --graceful-exit=auto from it.
  void end_of_save();
  // Shows `phase` in this rank's beat from now on (the supervisor's hang clock restarts).
  void show_phase(std::int32_t phase);
  std::int32_t current_phase() const {
    return save_started_us != 0 ? kPhaseSave : open_phases.empty() ? kPhaseTraining : open_phases.back().first;
  }
  void judge_stragglers(std::int64_t step, const std::int64_t* r, bool stalled);
  void count_step_time(std::int64_t step, bool saves_next, bool stalled);
  void note_step_times();
  void report_straggler(std::int64_t step, std::int64_t slowest_us, std::int64_t fastest_us);
  void flush_stragglers();
  std::string straggler_dir() const;
  void note_event(const char* what, std::int64_t step, std::int64_t took_ms, const std::string& reason);
  std::string take_events();  // the queued lines, leaving none
  void flush_events();
  void note_notices(const node_state& n, std::uint32_t agreed = 0);
  void flush_events_at_end();
  void wake() const {
    const std::uint64_t one = 1;
    if (wake_fd >= 0 && write(wake_fd, &one, sizeof one) < 0) { /* the watcher wakes on its timeout */
    }
  }
};

void controller::impl::open_state() {
  const std::string path = cfg.state_path.empty() ? default_state_path() : cfg.state_path;
  try {
    file = std::make_unique<node_state_file>(path);
    ns = &file->get();
    if (file->adopted())
      log_line(kLogWarning,
               "trainctl: node state %s was removed (systemd-logind's RemoveIPC=yes does this when the user's "
               "last login session on the node ends); this process (pid %d) shares its supervisor's open copy\n",
               path.c_str(), static_cast<int>(getpid()));
  } catch (const std::exception& e) {
    log_line(kLogWarning, "trainctl: %s; this process watches on its own (no sharing with other ranks on the node)\n",
             e.what());
    private_state = std::make_unique<node_state>();
    init_header(*private_state);
    ns = private_state.get();
  }
  const int slot = claim_beat_slot(state(), static_cast<std::int32_t>(getpid()));
  if (slot >= 0) {
    beat = &state().beats[slot];
    beat->exiting.store(0, std::memory_order_release);  // a new Controller has decided nothing yet
  } else {
    const char* rank = std::getenv("RANK");
    log_line(kLogWarning,
             "trainctl: the node state %s has heartbeat slots for %d rank processes, all taken: this process "
             "(rank %s, pid %d) is not watched for hangs on this node\n",
             path.c_str(), kMaxRanks, rank != nullptr ? rank : "?", static_cast<int>(getpid()));
  }
}

// The shared state is damaged (truncated, overwritten): say so once, and go on with a
// private one, watching the switches and the deadline from this process. The damaged
// mapping stays mapped (zero pages after a truncation) until the controller ends, so
// a reader that still holds the old pointer reads (and writes) harmless zeros.
void controller::impl::fall_back_to_private(const std::string& why) {
  auto fresh = std::make_unique<node_state>();
  init_header(*fresh);
  fresh->deadline_ms.store(known_deadline_ms);  // the damaged state's own may be zeros or junk
  std::lock_guard<std::recursive_mutex> hold(switches_mu);
  for (auto& s : switches) {
    s.slot = claim_switch_slot(*fresh, s.exit ? switch_kind::exit : switch_kind::save, s.name, s.path);
    if (!s.exit && s.slot >= 0) {
      // Touches from now on count on top of what this rank saved for; the file as it
      // is now was seen already.
      fresh->slots[s.slot].token.store(switch_token(s.path));
      fresh->slots[s.slot].count.store(s.consumed);
      s.floor = s.consumed;
    }
  }
  log_line(kLogWarning,
           "trainctl: %s; this process ignores it and watches the switches and the deadline on its own from "
           "now on\n",
           why.c_str());
  // The heartbeat stays where it was: the rank's thread writes it without a lock, and
  // the supervisor reads it there for as long as it can.
  private_state = std::move(fresh);
  ns.store(private_state.get(), std::memory_order_release);
}

void controller::impl::on_supervisor_gone() {
  log_line(kLogWarning,
           "trainctl: the supervisor of this task is gone (killed or crashed): for SLURM the task has ended, so "
           "rank %d saves and exits as after a notice rather than run on outside the job's control\n",
           cfg.rank);
  local_bits.fetch_or(kFlagSignal, std::memory_order_release);
  close(supervisor_fd);
  supervisor_fd = -1;
}

void controller::impl::register_switch(bool exit, const std::string& name, const std::string& path) {
  if (switches.size() >= kMaxLocalSwitches)
    throw std::invalid_argument("trainctl: too many switches (at most " + std::to_string(kMaxLocalSwitches) + ")");
  std::lock_guard<std::recursive_mutex> hold(switches_mu);
  local_switch s{exit, name, path};
  node_state& n = state();
  s.slot = claim_switch_slot(n, exit ? switch_kind::exit : switch_kind::save, name, path);  // shared or private
  if (s.slot < 0)
    log_line(kLogWarning, "trainctl: %s=%s: the node state has no free slot; only this process's first look counts\n",
             name.c_str(), path.c_str());
  // One stat at start, so a switch present before the job makes the first check exit,
  // whether or not the node's watcher has looked yet.
  s.initial = switch_token(path);
  if (exit && s.initial != 0) local_bits.fetch_or(kFlagExitSwitch, std::memory_order_release);
  if (!exit) {
    // A save switch present at the start counts as one request: the touch the node's
    // publisher counted last, or one it has not counted yet.
    const std::int64_t counted = s.slot >= 0 ? n.slots[s.slot].count.load(std::memory_order_acquire) : 0;
    const std::int64_t counted_token = s.slot >= 0 ? n.slots[s.slot].token.load(std::memory_order_acquire) : 0;
    const bool uncounted = s.initial != 0 && s.initial > counted_token;
    s.consumed = s.initial != 0 && !uncounted ? std::max<std::int64_t>(0, counted - 1) : counted;
    s.floor = uncounted ? counted + 1 : counted;
  }
  const std::string dir = dir_of(path);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    log_line(kLogWarning, "trainctl: %s=%s: directory %s: %s; checking for it every %s\n", name.c_str(), path.c_str(),
             dir.c_str(), std::strerror(errno), format_duration(cfg.poll_interval).c_str());
  } else if (access(dir.c_str(), X_OK) != 0) {
    log_line(kLogWarning, "trainctl: %s=%s: directory %s cannot be searched (%s); the switch cannot be seen\n",
             name.c_str(), path.c_str(), dir.c_str(), std::strerror(errno));
  }
  switches.push_back(std::move(s));
  n.seq.fetch_add(1, std::memory_order_release);
  wake();
}

void controller::impl::note_event(const char* what, std::int64_t step, std::int64_t took_ms,
                                  const std::string& reason) {
  if (cfg.rank != 0 || events_path.empty()) return;
  run_event e;
  e.ms = unix_now_ms();
  e.job = events_job;
  e.what = what;
  e.step = step;
  e.took_ms = took_ms;
  e.reason = reason;
  {
    std::lock_guard<std::mutex> hold(events_mu);
    events_pending += format_run_event(e);
  }
  wake();
}

std::string controller::impl::take_events() {
  std::lock_guard<std::mutex> hold(events_mu);
  return std::exchange(events_pending, std::string());
}

void controller::impl::flush_events() {
  const std::string lines = take_events();
  if (lines.empty()) return;
  const std::string why = append_run_events(events_path, lines);
  if (!why.empty() && why != events_problem)
    log_line(kLogWarning, "trainctl: %s; `trainctl report` will not see this task's saves\n", why.c_str());
  events_problem = why;
}

// Each notice once, as the watcher sees it (within a poll interval), or the rank's
// thread at an exit it brings: a mark on the report's timeline. Whichever node's
// supervisor raised it, rank 0's node state has it in time, or the ranks' agreement on
// it does (`agreed`): the exit may come from another node's vote before this node's
// supervisor has published the notice.
void controller::impl::note_notices(const node_state& n, std::uint32_t agreed) {
  if (cfg.rank != 0 || events_path.empty()) return;
  std::uint32_t flags = valid_flags(n) | local_bits.load(std::memory_order_acquire) | agreed;
  // A signal the rank caught is a notice of its own only without a supervisor: with one,
  // it is the supervisor's relay of a notice its flags already tell.
  if (!supervised && (g_signals_seen.load(std::memory_order_acquire) & signal_mask) != 0) flags |= kFlagSignal;
  static constexpr std::pair<std::uint32_t, const char*> kKinds[] = {
      {kFlagPreempted, "preempted"}, {kFlagDeadline, "deadline"}, {kFlagSignal, "signal"},
      {kFlagMemory, "memory"},       {kFlagHang, "hang"},         {kFlagPeer, "peer-failed"}};
  for (const auto& [flag, kind] : kKinds) {
    if ((flags & flag) != 0 && (noticed_flags.fetch_or(flag) & flag) == 0) note_event("notice", -1, -1, kind);
  }
}

// The last lines and findings, from a thread this rank waits for at most 2 s: a stalled
// home or log directory must not keep a rank that is done from ending (what was not
// written is lost then, and the report says less).
void controller::impl::flush_events_at_end() {
  std::string lines = take_events();
  bool findings = false;
  {
    std::lock_guard<std::mutex> hold(events_mu);
    findings = !slow_pending.empty();
  }
  if (lines.empty() && !findings) return;
  auto done = std::make_shared<std::atomic<bool>>(false);
  // Detached: it holds no reference to this controller (the findings go by value).
  std::vector<straggler_finding> pending;
  {
    std::lock_guard<std::mutex> hold(events_mu);
    pending.swap(slow_pending);
  }
  std::thread([path = events_path, lines = std::move(lines), pending = std::move(pending), dir = straggler_dir(),
               done] {
    if (!lines.empty()) append_run_events(path, lines);
    for (const auto& f : pending) record_straggler(f, dir);
    done->store(true, std::memory_order_release);
  }).detach();
  for (int i = 0; i < 200 && !done->load(std::memory_order_acquire); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void controller::impl::look_after_state(std::unique_ptr<node_role>& role, const publisher_options& popts) {
  flush_events();
  flush_stragglers();
  // Once per process: the guard is the process's, and so is the handler that displaced it.
  static std::atomic<bool> told_rearm{false};
  if (rearm_sigbus_guard() && !told_rearm.exchange(true))
    log_line(kLogWarning,
             "trainctl: rank %d (pid %d): a SIGBUS handler was installed after trainctl's guard of the node state "
             "(as faulthandler.enable() does); the guard runs first again and passes other faults to it\n",
             cfg.rank, static_cast<int>(getpid()));
  if (file && ns.load(std::memory_order_relaxed) != private_state.get()) {
    const std::string damage = file->damage();
    if (!damage.empty()) {
      role.reset();
      fall_back_to_private(damage);
    }
  }
  node_state& n = state();
  const bool shared = file && &n != private_state.get();
  known_deadline_ms = n.deadline_ms.load(std::memory_order_acquire);
  if (!role) role = std::make_unique<node_role>(shared ? file.get() : nullptr, n, popts);
  const node_role::turn t = role->look();
  if (t.lost)  // another process took the role while this one was stopped or stuck: it follows
    log_line(kLogWarning, "trainctl: rank %d (pid %d) no longer publishes the node state: another process took over\n",
             cfg.rank, static_cast<int>(getpid()));
  if (t.taken_from != 0)
    log_line(kLogWarning,
             "trainctl: the node's publisher (pid %d) has not refreshed the node state %s for over %lld ms; rank %d "
             "(pid %d) publishes it from now on\n",
             t.taken_from, file->path().c_str(), static_cast<long long>(publisher_stale_after_ms(n)), cfg.rank,
             static_cast<int>(getpid()));
  if (!t.problem.empty())
    log_line(kLogWarning, "trainctl: %s; the node's other processes watch the switches\n", t.problem.c_str());
  if (supervisor_fd >= 0) {
    pollfd p{supervisor_fd, POLLIN, 0};
    if (poll(&p, 1, 0) > 0) on_supervisor_gone();
  }
  // The deadline, whoever publishes: the supervisor writes it as soon as it knows it,
  // so a supervisor that died or stopped does not take it along.
  const std::int64_t now = unix_now_ms();
  for (const std::int64_t d :
       {local_deadline_ms.load(std::memory_order_acquire), n.deadline_ms.load(std::memory_order_acquire)})
    if (d > 0 && now >= d) local_bits.fetch_or(kFlagDeadline, std::memory_order_release);
  note_notices(n);
  const std::int64_t remove_at = remove_save_at_ms.load(std::memory_order_acquire);
  if (remove_at != 0 && now >= remove_at) {
    std::lock_guard<std::recursive_mutex> hold(switches_mu);
    remove_save_at_ms.store(0, std::memory_order_release);
    bool settled = true;
    for (const auto& s : switches)
      if (!s.exit) settled &= remove_consumed(s);
    if (!settled) retry_removal_soon();
  }
}

void controller::impl::retry_removal_soon() {
  remove_save_at_ms.store(unix_now_ms() + cfg.poll_interval.count(), std::memory_order_release);
  wake();
}

void controller::impl::watch_loop() {
  std::unique_ptr<node_role> role;
  publisher_options popts;
  popts.poll_interval = cfg.poll_interval;
  popts.memory = cfg.memory;
  popts.gpu_memory = cfg.gpu;
  while (!stop.load(std::memory_order_acquire)) {
    look_after_state(role, popts);
    node_state& n = state();
    // Wake for the next deadline, and when the publisher's heartbeat would go stale.
    const std::int64_t now = unix_now_ms();
    std::chrono::milliseconds wait = role->until_stale(now, cfg.poll_interval);
    for (const std::int64_t d : {local_deadline_ms.load(std::memory_order_acquire),
                                 n.deadline_ms.load(std::memory_order_acquire), remove_save_at_ms.load()})
      if (d > now) wait = std::min(wait, std::chrono::milliseconds(d - now));
    if (role->publishes()) {
      role->pub()->wait_and_refresh(wake_fd, wait);
    } else {
      pollfd fds[2] = {{wake_fd, POLLIN, 0}, {supervisor_fd, POLLIN, 0}};
      poll(fds, supervisor_fd >= 0 ? 2 : 1, static_cast<int>(wait.count()));
    }
    std::uint64_t drained;
    while (read(wake_fd, &drained, sizeof drained) > 0) {
    }
  }
}

void controller::impl::end_of_save() {
  const std::int64_t ms = (steady_us() - save_started_us) / 1000;
  save_started_us = 0;
  note_event("saved", -1, ms, "");
  raise_to(state().longest_save_ms, ms);
  show_phase(current_phase());
}

void controller::impl::show_phase(std::int32_t phase) {
  quiet_since_ms = clock_us(CLOCK_REALTIME_COARSE) / 1000;
  if (beat == nullptr) return;
  beat->phase_ms.store(quiet_since_ms, std::memory_order_relaxed);
  beat->phase.store(phase, std::memory_order_release);
}

void controller::phase_begin(const std::string& name) {
  if (!valid_phase_name(name))
    throw std::invalid_argument("trainctl: phase name '" + name +
                                "': accepted: 1 to 31 of letters, digits, '_', '.', '-' (not first), e.g. eval");
  impl& m = *impl_;
  m.steps_window_busy = true;  // its time is no step's
  std::int32_t phase = kPhaseSave;
  // The loop's own save is a save on `trainctl report`'s timeline too (inside one trainctl
  // asked for, it only ends that one more precisely).
  if (name == "save" && m.save_started_us == 0) m.note_event("save", m.last_step, -1, "loop");
  if (name != "save") {
    const int slot = claim_phase_slot(m.state(), name);
    phase = kPhaseNamed + (slot >= 0 ? slot : kMaxPhases);  // past the table: judged without a learnt budget
    if (slot < 0 && !m.phase_slots_full_said) {
      m.phase_slots_full_said = true;
      log_line(kLogWarning,
               "trainctl: phase '%s': the node state holds %d phase names, all taken: its duration is not "
               "learnt (a hang in it is judged by the first-time budget)\n",
               name.c_str(), kMaxPhases);
    }
  }
  if (name == "restore" && m.restore_at == SIZE_MAX) m.restore_at = m.open_phases.size();
  m.open_phases.emplace_back(phase, steady_us());
  m.show_phase(m.current_phase());
}

void controller::phase_end() {
  impl& m = *impl_;
  if (m.open_phases.empty()) throw std::invalid_argument("trainctl: phase_end() without an open phase");
  const auto [phase, began_us] = m.open_phases.back();
  m.open_phases.pop_back();
  const std::int64_t ms = (steady_us() - began_us) / 1000;
  node_state& ns = m.state();
  if (phase == kPhaseSave) {
    m.note_event("saved", -1, ms, "");
    raise_to(ns.longest_save_ms, ms);
  } else if (phase - kPhaseNamed < kMaxPhases) {
    raise_to(ns.phases[phase - kPhaseNamed].longest_ms, ms);
  }
  if (m.open_phases.size() == m.restore_at) {
    m.restore_at = SIZE_MAX;
    m.note_event("restore", m.last_step, ms, "");
  }
  m.show_phase(m.current_phase());
}

// Only the touches already counted and saved for: a newer touch after the decision is
// kept for the next save (this node counts it, or its mtime is newer than the counted one).
bool controller::impl::remove_consumed(const local_switch& s) const {
  const node_state& n = state();
  const bool slot = s.slot >= 0 && has_header(n);
  const std::int64_t counted = slot ? n.slots[s.slot].token.load(std::memory_order_acquire) : s.initial;
  const std::int64_t now_token = switch_token(s.path);
  if (now_token == 0) return true;
  if (now_token > counted) return !slot;  // not counted here yet (without a slot nothing will count it)
  if (slot && n.slots[s.slot].count.load(std::memory_order_acquire) > s.consumed) return true;
  if (unlink(s.path.c_str()) != 0 && errno != ENOENT)
    log_line(kLogWarning, "trainctl: cannot remove %s %s after the save (%s); it will not trigger another save\n",
             s.name.c_str(), s.path.c_str(), std::strerror(errno));
  return true;
}

controller::controller(const config& cfg) : impl_(std::make_unique<impl>(*cfg.impl_)) {
  impl& m = *impl_;
  m.open_state();
  if (const char* job = std::getenv("SLURM_JOB_ID")) {
    m.events_job = job;
    m.events_path = own_run_events_path();
  }
  m.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (m.wake_fd < 0) throw std::system_error(errno, std::generic_category(), "trainctl: eventfd");
  if (!m.cfg.kill_switch.empty()) m.register_switch(true, "kill-switch", m.cfg.kill_switch);
  if (!m.cfg.save_switch.empty()) m.register_switch(false, "save-switch", m.cfg.save_switch);
  for (const auto& np : m.cfg.exit_switches) m.register_switch(true, np.name, np.path);
  for (const auto& np : m.cfg.save_switches) m.register_switch(false, np.name, np.path);
  m.local_deadline_ms.store(static_cast<std::int64_t>(m.cfg.deadline * 1000));
  if (m.cfg.deadline > 0 && unix_now_ms() >= static_cast<std::int64_t>(m.cfg.deadline * 1000))
    m.local_bits.fetch_or(kFlagDeadline);
  for (int sig : install_notice_handlers(m.cfg.signals))
    log_line(kLogWarning, "trainctl: cannot catch signal %s; it is ignored\n", signal_name(sig).c_str());
  for (int sig : m.cfg.signals) m.signal_mask |= 1ull << (sig - 1);
  m.supervisor_fd = open_supervisor_pidfd();
  m.supervised = m.supervisor_fd >= 0;
  // A nudge: this rank is in the node state's heartbeat slots now, and its supervisor
  // starts watching it (its death seen the moment it happens) without polling the slots.
  // SIGCHLD: one the supervisor already listens for, which no user can choose as a notice
  // and whose default action is to ignore it.
  if (m.supervisor_fd >= 0 && m.beat != nullptr) syscall(SYS_pidfd_send_signal, m.supervisor_fd, SIGCHLD, nullptr, 0);
  m.watcher = std::thread([&m] { m.watch_loop(); });
  // Where Yama restricts ptrace to ancestors (ptrace_scope 1), let the supervisor's own
  // children (eu-stack, gdb) read this process's native stack for the hang diagnosis.
  if (const char* sup = std::getenv("TRAINCTL_SUPERVISOR_PID")) {
    const long pid = std::strtol(sup, nullptr, 10);
    if (pid > 1) prctl(PR_SET_PTRACER, static_cast<unsigned long>(pid), 0, 0, 0);  // EINVAL without Yama: fine
  }
}

controller::~controller() {
  impl& m = *impl_;
  m.stop.store(true, std::memory_order_release);
  m.wake();
  if (m.watcher.joinable()) m.watcher.join();
  remove_notice_handlers(m.cfg.signals);
  // Under a supervisor the notices come as USR1/USR2 (its relay, or scancel --signal). A
  // supervisor on a loaded node can hear of one after the ranks agreed to exit: its relay
  // then finds this rank past its loop, where the default action would kill it and
  // mpirun report the job failed (seen with 3 e2e tests side by side on 2 cores).
  if (m.supervised) ignore_late_notices(m.cfg.signals);
  if (m.save_started_us != 0 && m.decided.exit) m.end_of_save();  // the exit's save, made before this end
  if (m.first_step_noted) m.note_step_times();
  // How long after its last check() the rank ended: a crash's teardown is no training.
  if (m.first_step_noted)
    m.note_event("end", m.last_step, m.last_check_ms != 0 ? unix_now_ms() - m.last_check_ms : -1, "");
  m.flush_events_at_end();
  if (m.beat != nullptr) m.beat->pid.store(0, std::memory_order_release);
  if (m.remove_save_at_ms.load() != 0) {  // this rank ends: the file must not start the next job with a save
    std::lock_guard<std::recursive_mutex> hold(m.switches_mu);
    for (const auto& s : m.switches)
      if (!s.exit) m.remove_consumed(s);
  }
  if (m.file) {
    m.file->release_publisher();  // another process takes over at once
    m.file->unlink_if_last();
  }
  if (m.wake_fd >= 0) close(m.wake_fd);
  if (m.supervisor_fd >= 0) close(m.supervisor_fd);
}

// Under a supervisor the same signal reached it too (SLURM signals every process of the
// step), and it tells within its classification wait (2 s) what the signal means:
// preempted, the deadline, or a plain signal, through the node state's flags. A rank that
// acted on the raw signal at once would agree on "signal" at its next step, before the
// supervisor's answer (seen on a loaded machine: a preemption ended as reason signal).
// So a caught signal counts only once the supervisor had time to say; a supervisor that
// is gone is seen apart (on_supervisor_gone). Without a supervisor it counts at once.
constexpr std::int64_t kSupervisorClassifiesUs = 3'000'000;

bool controller::impl::caught_signal_counts() const noexcept {
  if ((g_signals_seen.load(std::memory_order_acquire) & signal_mask) == 0) return false;
  if (!supervised) return true;
  const std::int64_t now = steady_us();
  std::int64_t first = 0;
  if (signal_caught_us.compare_exchange_strong(first, now)) first = now;
  return now - first >= kSupervisorClassifiesUs;
}

bool controller::should_exit() const noexcept {
  const impl& m = *impl_;
  return ((m.local_bits.load(std::memory_order_relaxed) | valid_flags(*m.ns.load(std::memory_order_relaxed))) &
          kExitMask) != 0 ||
         m.caught_signal_counts();
}

// vote() and decide() throw only for a vector shorter than kVoteLen, which this never
// passes.
bool controller::should_save() noexcept {  // NOLINT(bugprone-exception-escape)
  impl& m = *impl_;
  std::lock_guard<std::recursive_mutex> hold(m.switches_mu);
  bool pending = false;
  for (const auto& s : m.switches) pending |= !s.exit && m.token_of(s) > s.consumed;
  if (!pending) return false;
  std::int64_t local[kVoteLen] = {};
  m.fill_vote(local, kVoteLen);
  // Saves only: an exit decided here, from this process's view alone, would be latched
  // and make check() answer "exit" on a step where the other ranks agree on nothing.
  decision d;
  return m.consume_saves(0, local, d, false);
}

bool controller::vote(std::int64_t step, std::int64_t* v, std::size_t len) {
  if (len < kVoteLen)
    throw std::invalid_argument("trainctl: vote vector needs " + std::to_string(kVoteLen) + " elements");
  impl& m = *impl_;
  if (m.save_started_us != 0) m.end_of_save();
  if (!m.first_step_noted) {
    m.first_step_noted = true;
    m.note_event("first_step", step, -1, "");
    // The breaker: this run resumed no later than the array's last runs, which failed
    // without getting further. It votes to end here, at the first agreement.
    const std::int64_t armed = armed_breaker_step(m.state());
    if (armed >= 0 && step <= armed) m.local_bits.fetch_or(kFlagNoProgress, std::memory_order_release);
  }
  m.last_step = step;
  m.last_check_ms = clock_us(CLOCK_REALTIME_COARSE) / 1000;  // a few ns: the coarse clock is a memory read
  m.fill_vote(v, len);
  const bool due = step % m.cfg.check_every == 0;
  if (!due) return false;
  if (m.beat != nullptr) {                        // the supervisor's hang detection reads these
    const std::int64_t now_ms = m.last_check_ms;  // this call's time, read above
    // --hang-timeout=auto learns from the longest quiet time of a training rank.
    if (m.quiet_since_ms != 0 && m.open_phases.empty() && now_ms > m.quiet_since_ms)
      raise_to(m.state().longest_quiet_ms, now_ms - m.quiet_since_ms);
    m.quiet_since_ms = now_ms;
    m.beat->rank.store(m.cfg.rank, std::memory_order_relaxed);
    m.beat->step.store(step, std::memory_order_relaxed);
    m.beat->beat_ms.store(now_ms, std::memory_order_relaxed);
  }
  if (m.cfg.straggler_factor > 0 && m.window_start_us != 0 && step > m.window_start_step) {
    const std::int64_t now_us = steady_us();
    // Work per step since the last agreement returned: the compute the loop marked, or
    // else the time this rank spent outside the agreement (a fast rank's wait for a slow
    // one in the agreement is not counted; in a gradient all_reduce it would be).
    const std::int64_t marked = m.compute_total_us.load(std::memory_order_acquire) - m.window_compute_us;
    const std::int64_t spent = marked > 0 ? marked : now_us - m.window_start_us;
    m.work_us = std::max<std::int64_t>(1, spent / (step - m.window_start_step));
    m.window_timed = true;
    m.window_marked = marked > 0;
    const std::int64_t capped = std::min<std::int64_t>(m.work_us, std::int64_t{1} << 40);
    if (m.cfg.rank < (1 << kRankBits)) v[kVoteSlowest] = (capped << kRankBits) | m.cfg.rank;
    v[kVoteNegFastest] = -capped;
  }
  return due;
}

void controller::compute_begin() noexcept { impl_->compute_open_us.store(steady_us(), std::memory_order_relaxed); }

void controller::compute_end() noexcept {
  const std::int64_t began = impl_->compute_open_us.exchange(0, std::memory_order_relaxed);
  if (began > 0) impl_->compute_total_us.fetch_add(steady_us() - began, std::memory_order_release);
}

// This process's view of every exit reason and switch, no step times.
void controller::impl::fill_vote(std::int64_t* v, std::size_t len) const {
  std::lock_guard<std::recursive_mutex> hold(switches_mu);
  std::fill(v, v + len, 0);
  const std::uint32_t bits = local_bits.load(std::memory_order_acquire) | valid_flags(state());
  v[kVoteDeadline] = (bits & kFlagDeadline) != 0;
  v[kVotePreempted] = (bits & kFlagPreempted) != 0;
  v[kVoteMemory] = (bits & kFlagMemory) != 0;
  v[kVoteHang] = (bits & kFlagHang) != 0;
  v[kVotePeer] = (bits & kFlagPeer) != 0;
  v[kVoteNoProgress] = (bits & kFlagNoProgress) != 0;
  v[kVoteSignal] = caught_signal_counts() || (bits & kFlagSignal) != 0;
  v[kVoteNegFastest] = kNoTime;
  const node_state& n = state();
  v[kVoteEndTime] =
      pack_end_news(n.end_ms.load(std::memory_order_acquire), n.end_read_ms.load(std::memory_order_acquire));
  for (std::size_t i = 0; i < switches.size(); ++i) v[kVoteSwitch0 + i] = token_of(switches[i]);
}

// The latest EndTime read among the ranks' nodes (the agreement's kVoteEndTime): when it
// is later than this node's supervisor read and says another EndTime, this node's state
// takes it, and its deadline moves by as much. One rank of the node writes it and says
// so. A node whose supervisor was stopped (or is slow to read) when the TimeLimit was
// raised would otherwise fire the old deadline, and the whole job would exit early.
void controller::impl::learn_end_news(std::int64_t news) {
  if (news <= 0) return;
  const std::int64_t read_ms = ((news >> 32) + kNewsEpochS) * 1000;
  const std::int64_t end_ms = ((news & 0xffffffff) + kNewsEpochS) * 1000;
  node_state& n = state();
  std::int64_t known_read = n.end_read_ms.load(std::memory_order_acquire);
  const std::int64_t known_end = n.end_ms.load(std::memory_order_acquire);
  // Nothing read on this node (no supervisor here): no graceful exit to keep.
  if (known_end == 0 || read_ms / 1000 <= known_read / 1000 || end_ms / 1000 == known_end / 1000) return;
  if (read_ms > unix_now_ms() + 60'000) return;  // a read from the future: a damaged state's, not news
  if (!n.end_read_ms.compare_exchange_strong(known_read, read_ms, std::memory_order_acq_rel)) return;
  n.end_ms.store(end_ms, std::memory_order_release);
  const std::int64_t deadline = n.deadline_ms.load(std::memory_order_acquire);
  if (deadline > 0) n.deadline_ms.store(deadline + (end_ms - known_end), std::memory_order_release);
  n.seq.fetch_add(1, std::memory_order_release);
  wake();
  const auto clock_time = [](std::int64_t ms) {
    const time_t t = static_cast<time_t>(ms / 1000);
    tm parts{};
    char text[16] = "?";
    if (localtime_r(&t, &parts) != nullptr) std::strftime(text, sizeof text, "%H:%M:%S", &parts);
    return std::string(text);
  };
  // Not a fault by itself: each node's supervisor reads in a second of its own within
  // the poll period; a stopped one is one reason this node's read is later.
  log_line(kLogWarning,
           "trainctl: rank %d: EndTime moved to %s (%+lld s): another node's supervisor read it at %s, before "
           "this node's did; this node's deadline moves with it\n",
           cfg.rank, clock_time(end_ms).c_str(), static_cast<long long>((end_ms - known_end) / 1000),
           clock_time(read_ms).c_str());
}

decision controller::decide(std::int64_t step, const std::int64_t* r, std::size_t len) {
  if (len < kVoteLen)
    throw std::invalid_argument("trainctl: vote vector needs " + std::to_string(kVoteLen) + " elements");
  return impl_->decide(step, r, true);
}

decision controller::impl::decide(std::int64_t step, const std::int64_t* r, bool agreed) {
  impl& m = *this;
  std::lock_guard<std::recursive_mutex> hold(switches_mu);
  decision d;
  if (agreed) m.learn_end_news(r[kVoteEndTime]);
  if (!m.decided.exit) {
    std::string reason;
    auto first_switch = [&](bool kill) -> std::string {
      for (std::size_t i = 0; i < m.switches.size(); ++i) {
        const auto& s = m.switches[i];
        if (s.exit && r[kVoteSwitch0 + i] > 0 && (s.name == "kill-switch") == kill) return s.name;
      }
      return "";
    };
    reason = first_switch(true);
    if (reason.empty() && r[kVotePreempted]) reason = "preempted";
    if (reason.empty() && r[kVoteDeadline]) reason = "deadline";
    if (reason.empty() && r[kVoteNoProgress]) reason = "no-progress";
    if (reason.empty() && r[kVoteMemory]) reason = "memory";
    if (reason.empty() && r[kVoteHang]) reason = "hang";
    if (reason.empty() && r[kVotePeer]) reason = "peer-failed";
    if (reason.empty() && r[kVoteSignal]) reason = "signal";
    if (reason.empty()) reason = first_switch(false);
    if (!reason.empty()) {
      m.decided.exit = true;
      m.decided.reason = reason;
      m.local_bits.fetch_or(kFlagDecided, std::memory_order_release);
      // The notice before the exit it brought, on the timeline; a notice the ranks agreed
      // on counts though this node's supervisor may not have published it yet.
      std::uint32_t agreed = 0;
      for (const auto& [vote, flag] :
           {std::pair{kVotePreempted, kFlagPreempted}, std::pair{kVoteDeadline, kFlagDeadline},
            std::pair{kVoteMemory, kFlagMemory}, std::pair{kVoteHang, kFlagHang}, std::pair{kVotePeer, kFlagPeer},
            std::pair{kVoteSignal, kFlagSignal}})
        if (r[vote]) agreed |= flag;
      m.note_notices(m.state(), agreed);
      if (m.cfg.rank == 0 && reason == "no-progress")
        log_line(kLogWarning,
                 "trainctl: exit at step %lld: no-progress: the array's last runs failed without getting past the "
                 "step this one resumed at; it ends now, and the job with exit status 93 (the supervisor's log "
                 "names them; TRAINCTL_NO_PROGRESS_RUNS=0 turns this off)\n",
                 static_cast<long long>(step));
      else if (m.cfg.rank == 0)
        log_line(kLogInfo, "trainctl: exit at step %lld: %s\n", static_cast<long long>(step), reason.c_str());
    }
  }
  d.exit = m.decided.exit;
  d.reason = m.decided.reason;
  m.consume_saves(step, r, d, agreed);
  // The loop saves now (on d.save, and on the first d.exit); the save ends at its next
  // call, or with the rank after an exit.
  if (d.save || (d.exit && !m.exit_save_timed)) {
    const bool exit_save = d.exit && !m.exit_save_timed;
    m.note_event(exit_save ? "exit" : "save", step, -1, exit_save ? d.reason : d.save_reason);
    m.save_started_us = steady_us();
    m.show_phase(kPhaseSave);  // the hang clock gives the save its own budget
    m.exit_save_timed = m.exit_save_timed || d.exit;
    // The supervisor learns from an exit save the time limit cuts short (its beat is
    // this call's, the last this rank makes).
    if (exit_save && m.beat != nullptr) m.beat->exiting.store(1, std::memory_order_release);
  }
  // An agreement the supervisor's hang flag (--hang-action=save-exit) reached ends the
  // window that held the stall: the report counts that time as hung, so it is neither a
  // slow step nor a straggler's price as well.
  const bool stalled = r[kVoteHang] != 0;
  if (m.cfg.rank == 0) m.count_step_time(step, d.save || d.exit, stalled);
  if (m.cfg.straggler_factor > 0) {
    m.judge_stragglers(step, r, stalled);
    m.window_timed = false;
    m.window_start_us = steady_us();
    m.window_start_step = step;
    m.window_compute_us = m.compute_total_us.load(std::memory_order_acquire);
  }
  return d;
}

// Every rank sees the same reduced vector, so every rank counts the same strikes; the
// straggler itself writes where it runs (host, GPUs) and rank 0 says it in the log.
void controller::impl::judge_stragglers(std::int64_t step, const std::int64_t* r, bool stalled) {
  if (cfg.straggler_factor <= 0 || r[kVoteNegFastest] == kNoTime || r[kVoteSlowest] <= 0) return;
  const std::int64_t slowest_us = r[kVoteSlowest] >> kRankBits, fastest_us = -r[kVoteNegFastest];
  const int slowest = static_cast<int>(r[kVoteSlowest] & ((1 << kRankBits) - 1));
  // Under a millisecond per step apart is noise, whatever the ratio.
  const bool slow = fastest_us > 0 && static_cast<double>(slowest_us) >= cfg.straggler_factor * fastest_us &&
                    slowest_us - fastest_us >= 1000;
  if (!slow) {
    strikes = 0;
    straggler = -1;
  } else {
    strikes = slowest == straggler ? strikes + 1 : 1;
    straggler = slowest;
  }
  if (beat != nullptr) beat->slow.store(straggler == cfg.rank ? strikes : 0, std::memory_order_relaxed);
  if (beat != nullptr) beat->step_us.store(work_us, std::memory_order_relaxed);
  if (beat != nullptr && window_timed && step > window_start_step && !stalled) {  // the straggler's price
    const std::int64_t steps = step - window_start_step;
    beat->work_marked.store(window_marked ? 1 : 0, std::memory_order_relaxed);
    beat->work_total_us.fetch_add(work_us * steps, std::memory_order_relaxed);
    beat->slowest_total_us.fetch_add(slowest_us * steps, std::memory_order_relaxed);
    beat->timed_steps.fetch_add(steps, std::memory_order_release);
  }
  if (slow && slowest == reported_straggler) {
    calm = 0;
  } else if (reported_straggler >= 0 && ++calm >= cfg.straggler_agreements) {
    reported_straggler = -1;
    calm = 0;
  }
  if (strikes == cfg.straggler_agreements && straggler != reported_straggler) {
    reported_straggler = straggler;
    calm = 0;
    report_straggler(step, slowest_us, fastest_us);
  }
}

// Rank 0: the window that ends at this agreement, as that many steps' time, unless a
// save or a marked phase (an evaluation) ran in it, or it held a hang's stall; `saves_next`:
// a save runs in the next.
void controller::impl::count_step_time(std::int64_t step, bool saves_next, bool stalled) {
  const std::int64_t now = steady_us();
  if (steps_window_us != 0 && step > steps_window_step && !steps_window_busy && !stalled)
    step_time_counts.add(now - steps_window_us, step - steps_window_step);
  steps_window_us = now;
  steps_window_step = step;
  steps_window_busy = saves_next || !open_phases.empty();
}

// Rank 0's step times in the run events as it ends: `trainctl report` flags the outliers.
void controller::impl::note_step_times() {
  if (cfg.rank != 0 || events_path.empty() || step_time_counts.steps() == 0) return;
  const step_time_summary s = step_time_counts.summary();
  run_event e;
  e.ms = unix_now_ms();
  e.job = events_job;
  e.what = "step_times";
  e.figures = {{"steps", s.steps},
               {"median_us", s.median_us},
               {"mad_us", s.mad_us},
               {"outliers", s.outlier_steps},
               {"excess_us", s.excess_us}};
  std::lock_guard<std::mutex> hold(events_mu);
  events_pending += format_run_event(e);
}

// The straggler says so on its own stderr and puts the finding in its heartbeat slot;
// the node's supervisor writes slow_nodes and the bad-node memory from there (without
// one, this process's watcher thread does). The training thread opens nothing.
void controller::impl::report_straggler(std::int64_t step, std::int64_t slowest_us, std::int64_t fastest_us) {
  const double factor = static_cast<double>(slowest_us) / static_cast<double>(fastest_us);
  if (cfg.rank == 0 && straggler != 0)
    log_line(kLogWarning,
             "trainctl: straggler at step %lld: rank %d takes %.1f ms per step, the fastest rank %.1f ms (x%.2f), "
             "%d agreements in a row\n",
             static_cast<long long>(step), straggler, slowest_us / 1000.0, fastest_us / 1000.0, factor, strikes);
  if (straggler != cfg.rank) return;
  const bool by_supervisor =
      beat != nullptr && &state() != private_state.get() && state().supervised.load(std::memory_order_acquire) == 1;
  log_line(kLogWarning,
           "trainctl: straggler at step %lld: this rank (%d) on %s takes %.1f ms per step, the fastest rank %.1f "
           "ms (x%.2f); %s\n",
           static_cast<long long>(step), cfg.rank, node_name().c_str(), slowest_us / 1000.0, fastest_us / 1000.0,
           factor, by_supervisor ? "the node's supervisor records it in slow_nodes" : "recorded in slow_nodes");
  if (by_supervisor) {
    beat->slow_step.store(step, std::memory_order_relaxed);
    beat->slow_us.store(slowest_us, std::memory_order_relaxed);
    beat->fastest_us.store(fastest_us, std::memory_order_relaxed);
    beat->slow_reports.fetch_add(1, std::memory_order_release);
    // Woken now, as for a new rank: the finding is written before this rank may end.
    if (supervisor_fd >= 0) syscall(SYS_pidfd_send_signal, supervisor_fd, SIGCHLD, nullptr, 0);
    return;
  }
  straggler_finding f;
  f.rank = cfg.rank;
  f.job = events_job.empty() ? "-" : events_job;
  f.step = step;
  f.slow_us = slowest_us;
  f.fastest_us = fastest_us;
  {
    std::lock_guard<std::mutex> hold(events_mu);
    slow_pending.push_back(f);
  }
  wake();
}

// Where slow_nodes goes: log_dir, else $SLURM_SUBMIT_DIR, else the working directory.
std::string controller::impl::straggler_dir() const {
  std::string dir = cfg.log_dir;
  if (dir.empty() && std::getenv("SLURM_SUBMIT_DIR") != nullptr) dir = std::getenv("SLURM_SUBMIT_DIR");
  return dir.empty() ? "." : dir;
}

// The watcher's part of report_straggler, without a supervisor.
void controller::impl::flush_stragglers() {
  std::vector<straggler_finding> pending;
  {
    std::lock_guard<std::mutex> hold(events_mu);
    pending.swap(slow_pending);
  }
  const std::string dir = straggler_dir();
  for (const auto& f : pending) {
    const std::string said = record_straggler(f, dir);
    // Only what did not happen: the rank's line said where it goes.
    for (std::size_t at = 0, end; at < said.size(); at = end + 1) {
      end = said.find('\n', at);
      const std::string line = said.substr(at, end - at);
      if (line.compare(0, 12, "recorded in ") != 0) log_line(kLogWarning, "trainctl: %s\n", line.c_str());
    }
  }
}

bool controller::impl::consume_saves(std::int64_t step, const std::int64_t* r, decision& d, bool agreed) {
  for (std::size_t i = 0; i < switches.size(); ++i) {
    auto& s = switches[i];
    const std::int64_t seen = r[kVoteSwitch0 + i];
    if (s.exit || seen <= s.consumed) continue;
    s.consumed = agreed ? seen : s.consumed + 1;
    if (!d.save) d.save_reason = s.name;
    d.save = true;
    if (cfg.rank != 0) continue;
    log_line(kLogInfo, "trainctl: save at step %lld: %s\n", static_cast<long long>(step), s.name.c_str());
    if (agreed || world_size() <= 1) {
      // By the watcher, at once: a stat and an unlink in the submit directory, which
      // may be a stalled mount, are no work for the training thread.
      remove_save_at_ms.store(unix_now_ms(), std::memory_order_release);
      wake();
    } else {
      // Not agreed: ranks on other nodes may not have looked yet. The file goes once
      // every node's publisher has had a few polls to count it.
      // (publish_every_ms: a holder's interval of a trainctl before the heartbeat.)
      const std::int32_t every = state().publish_every_ms.load(std::memory_order_relaxed);
      remove_save_at_ms = unix_now_ms() + 3 * std::max<std::int64_t>(every, cfg.poll_interval.count());
      wake();
    }
  }
  return d.save;
}

decision controller::check(std::int64_t step, const reducer& reduce) {
  std::int64_t v[kVoteLen];
  const bool due = vote(step, v, kVoteLen);
  if (reduce) {
    if (!due) {
      decision d;
      d.exit = impl_->decided.exit;
      d.reason = impl_->decided.reason;
      return d;
    }
    reduce(v, kVoteLen);
    return impl_->decide(step, v, true);
  }
  return impl_->decide(step, v, false);
}

void controller::set_deadline(double unix_seconds) {
  if (unix_seconds < 0)
    throw std::invalid_argument("trainctl: deadline: negative; accepted: unix seconds, or 0 for none");
  impl_->local_deadline_ms.store(static_cast<std::int64_t>(unix_seconds * 1000), std::memory_order_release);
  impl_->local_bits.fetch_and(~static_cast<std::uint32_t>(kFlagDeadline), std::memory_order_release);
  if (unix_seconds > 0 && unix_now_ms() >= static_cast<std::int64_t>(unix_seconds * 1000))
    impl_->local_bits.fetch_or(kFlagDeadline, std::memory_order_release);
  impl_->wake();
}

void controller::add_switch(bool exit, const std::string& name, const std::string& path) {
  config::impl probe;
  try {
    auto parsed = parse_named_paths(name + "=" + path);
    probe.set(exit ? "exit_switches" : "save_switches", parsed[0].name + "=" + parsed[0].path);
  } catch (const parse_error& e) {
    throw std::invalid_argument(std::string("trainctl: add_switch: ") + e.what());
  }
  const auto& np = exit ? probe.exit_switches[0] : probe.save_switches[0];
  impl_->register_switch(exit, np.name, np.path);
}

void controller::set_rank(int rank) {
  if (rank < 0) throw std::invalid_argument("trainctl: rank: negative; accepted: 0 or more");
  impl_->cfg.rank = rank;
}

int controller::check_every() const { return impl_->cfg.check_every; }

const std::string& controller::state_path() const {
  static const std::string none = "(private)";
  return impl_->file ? impl_->file->path() : none;
}

std::uint64_t controller::stat_calls() const { return impl_->state().stat_calls.load(std::memory_order_relaxed); }

}  // namespace trainctl
