// The node state: one small shared-memory file per job step and node, written by one
// publisher (the supervisor, or else the first rank process that takes the publisher
// lock) and read by every rank process on the node with plain atomic loads.
//
// Layout is versioned (kVersion); readers refuse a file with another magic, version or
// size rather than misread it. All fields are lock-free atomics; the layout is the same
// for every process of one build because it only holds fixed-size types.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "owned_fd.hpp"

// The node state's layout: a build reads only a file of its own layout (node_state::kVersion).
// A macro as well, so that a build's identity can be a string in its binaries (build_id.hpp).
// Only the test of mixed versions sets it from outside, to build a library of another
// layout (tests/CMakeLists.txt, trainctl_other_layout).
#ifndef TRAINCTL_NODE_STATE_LAYOUT
#define TRAINCTL_NODE_STATE_LAYOUT 12
#endif

namespace trainctl {

// Bits of node_state::flags and of a controller's local flags.
enum flag_bits : std::uint32_t {
  kFlagDeadline = 1u << 0,    // now >= the published deadline
  kFlagPreempted = 1u << 1,   // the supervisor saw preemption
  kFlagSignal = 1u << 2,      // a notice signal arrived (a supervisor's relay, or a rank's own)
  kFlagMemory = 1u << 3,      // memory threshold crossed
  kFlagExitSwitch = 1u << 4,  // some exit switch (kill switch or user exit switch) exists
  kFlagDecided = 1u << 5,     // local only: an agreed exit was already decided
  kFlagHang = 1u << 6,        // the supervisor found a rank hung (--hang-action=save-exit)
  kFlagPeer = 1u << 7,        // the step ends because a task on another node failed (a TERM after its death)
  // Local only (never in a node state's flags): this rank's first check() came no later
  // than the step the array's last runs failed at without progress (breaker.step1).
  kFlagNoProgress = 1u << 8,
};
// Any other bit in a node state's flags means the file is not what a publisher wrote.
constexpr std::uint32_t kKnownFlags = (kFlagPeer << 1) - 1;
constexpr std::uint32_t kExitMask = kFlagDeadline | kFlagPreempted | kFlagSignal | kFlagMemory | kFlagExitSwitch |
                                    kFlagDecided | kFlagHang | kFlagPeer | kFlagNoProgress;

enum class switch_kind : std::uint32_t { exit = 1, save = 2 };

constexpr int kMaxSlots = 16;
constexpr int kMaxPath = 1024;
constexpr int kMaxName = 32;

struct switch_slot {
  // 0 free, 1 being written, 2 ready. A slot is claimed with a CAS 0 -> 1 and never freed.
  std::atomic<std::uint32_t> state;
  std::uint32_t kind;  // switch_kind
  // Exit switches: mtime of the file in ns while it exists, 0 while it does not.
  // Save switches: the mtime of the newest touch counted (kept after the file is gone).
  std::atomic<std::int64_t> token;
  // Save switches: how many touches the node's publishers have seen (each new mtime
  // counts once), so that every rank saves once per touch, agreed or not.
  std::atomic<std::int64_t> count;
  char name[kMaxName];
  char path[kMaxPath];
};

// One rank process's progress, written by its controller at every check() and read by
// the supervisor (hang detection) and trainwatch-like readers. Claimed by a CAS on pid
// (0: free); a slot whose pid is gone is claimed again.
constexpr int kMaxRanks = 64;
constexpr int kMaxError = 200;
// The last straggler finding against a rank: its controller writes the step and the
// two step times, then bumps `reports` (release). The supervisor writes the line in
// LOG_DIR/slow_nodes from them, in a child with a deadline: the rank's own thread opens
// nothing in a shared directory (a planted FIFO or a stalled mount would stop the job's
// every rank at the next agreement).
struct beat_straggler {
  std::atomic<std::int64_t> reports;
  std::atomic<std::int64_t> step;
  std::atomic<std::int64_t> slow_us;
  std::atomic<std::int64_t> fastest_us;
};
// What a straggler's cost is priced from (`trainctl report`): over the agreement windows
// timed so far, their steps, this rank's work and the slowest rank's (agreed, the same on
// every rank). The supervisor writes them in the run events as it ends.
struct beat_work {
  std::atomic<std::int64_t> timed_steps;
  std::atomic<std::int64_t> total_us;
  std::atomic<std::int64_t> slowest_total_us;
};
// The last save trainctl asked a rank for (a save, or an exit with a save) and the last
// it committed (ctl.saved): 1 + its step (0: none yet) and when (unix ms). The supervisor
// records, as it ends, which ranks committed the save they were asked for.
// A save whose write goes on after the loop handed it off (an asynchronous checkpoint)
// is committed when the write ends: until then it is pending here (the oldest one's
// step + 1 and when its save began, unix ms; 0: none), and the supervisor judges its
// length by the save's budget (a finding, never a kill) and names it when the rank ends
// with it unwritten. `waiting` is 1 while the rank, at its end, waits for its writes.
struct beat_saves {
  std::atomic<std::int64_t> asked_step1;
  std::atomic<std::int64_t> asked_ms;
  std::atomic<std::int64_t> committed_step1;
  std::atomic<std::int64_t> committed_ms;
  std::atomic<std::int64_t> pending_step1;
  std::atomic<std::int64_t> pending_ms;
  std::atomic<std::int32_t> pending;
  std::atomic<std::int32_t> waiting;
};

struct rank_beat {
  std::atomic<std::int32_t> pid;
  std::atomic<std::int32_t> rank;
  std::atomic<std::int64_t> step;     // the last step check() saw (every call, agreed or not)
  std::atomic<std::int64_t> beat_ms;  // unix ms of that check(); 0 before the first
  std::atomic<std::int64_t> step_us;  // work per step outside check(), last agreement window
  std::atomic<std::int32_t> slow;     // agreements in a row this rank was the straggler
  std::atomic<std::int32_t> exiting;  // 1 from this rank's exit decision on: its exit save runs
  // What the rank is doing, for the hang clock: kPhaseTraining, kPhaseSave (a save
  // trainctl asked for, or the loop marked "save"), kPhaseWrite (at its end, waiting for
  // the writes of its saves: judged as a write, never hung), or kPhaseNamed + i (the loop's phase
  // in node_state::phases[i]); and since when (unix ms; 0 never changed). A rank is quiet
  // since the later of beat_ms and phase_ms, and judged by its phase's budget.
  std::atomic<std::int32_t> phase;
  std::atomic<std::int32_t> work_marked;  // 1: the loop marks its compute (compute_begin/end)
  std::atomic<std::int64_t> phase_ms;
  beat_straggler straggler;
  beat_work work;
  beat_saves saves;
  // The error this rank is dying of, as its loop said it (an uncaught Python exception's
  // last line: the package's excepthook), for the crash finding and the run events: the
  // text (printable ASCII, written once), then its length (release). 0: none.
  std::atomic<std::int32_t> error_len;
  char error[kMaxError];
};
constexpr std::int32_t kPhaseTraining = 0;
constexpr std::int32_t kPhaseSave = 1;
constexpr std::int32_t kPhaseWrite = 2;
constexpr std::int32_t kPhaseNamed = 3;

// A phase the loop marked (ctl.phase("eval")): its name and the longest it took on this
// node. Claimed like a switch slot (CAS 0 -> 1, written, 2) and never freed.
constexpr int kMaxPhases = 8;
struct phase_slot {
  std::atomic<std::uint32_t> state;
  std::uint32_t reserved;
  std::atomic<std::int64_t> longest_ms;
  char name[kMaxName];
};

// The no-progress breaker (run_progress.hpp), armed by a supervisor before its command
// starts: 1 + the step the array's last `runs` runs failed at without getting further
// (0: not armed). A rank whose first check() is at that step or earlier votes to end the
// run there.
struct node_breaker {
  std::atomic<std::int64_t> step1;
  std::atomic<std::int32_t> runs;
  std::int32_t reserved;
};

struct node_state {
  static constexpr std::uint64_t kMagic = 0x31534c5443444e54ull;  // "TNDCTLS1"
  static constexpr std::uint32_t kVersion = TRAINCTL_NODE_STATE_LAYOUT;

  std::uint64_t magic;
  std::uint32_t version;
  std::uint32_t size;
  std::atomic<std::uint32_t> flags;  // flag_bits
  std::atomic<std::uint32_t> seq;    // bumped on every change
  // Unix ms; 0 = none. Written as soon as it is known (and again when EndTime moves),
  // so that any process on the node can fire it on time, whoever publishes.
  std::atomic<std::int64_t> deadline_ms;
  std::atomic<std::int64_t> save_max;  // sum of the save slots' counts: "anything new?"
  // The publisher role: (pid << 32 | serial) of the holder, 0 for none. It is held while
  // published_ms stays fresh; a process that finds it stale (the holder stopped, or hangs
  // in a stat of a dead mount) takes it over with a compare-and-swap (publisher_stale).
  std::atomic<std::uint64_t> publisher_id;
  std::atomic<std::int32_t> supervised;        // 1 while a supervisor publishes
  std::atomic<std::int32_t> publish_every_ms;  // the holder's heartbeat interval
  std::atomic<std::uint64_t> stat_calls;       // metadata requests made by publishers
  std::atomic<std::int64_t> published_ms;      // when the publisher last looked (its heartbeat)
  // The longest save a rank on this node has made (ms from the decision to save to
  // its next call, or to its end after an exit): --graceful-exit=auto learns from it.
  std::atomic<std::int64_t> longest_save_ms;
  // The longest time a rank of this node went between two agreements while training
  // (no save, no marked phase): --hang-timeout=auto learns from it.
  std::atomic<std::int64_t> longest_quiet_ms;
  // The job's EndTime (unix ms, 0 = unknown) the deadline was computed from, and when
  // it was read from the controller. A supervisor writes both at each read; a rank
  // writes a fresher pair another node's supervisor read, which came in the agreement
  // (a node whose supervisor is stopped learns a raised TimeLimit that way), and moves
  // deadline_ms by as much as EndTime moved.
  std::atomic<std::int64_t> end_ms;
  std::atomic<std::int64_t> end_read_ms;
  node_breaker breaker;
  switch_slot slots[kMaxSlots];
  rank_beat beats[kMaxRanks];
  phase_slot phases[kMaxPhases];
};

static_assert(std::atomic<std::int64_t>::is_always_lock_free, "node state needs lock-free 64-bit atomics");
static_assert(std::atomic<std::uint32_t>::is_always_lock_free, "node state needs lock-free 32-bit atomics");
// Version 12's layout (11 and 12 differ in beat_saves: the pending writes). A change
// here is a new kVersion.
static_assert(sizeof(rank_beat) == 376 && offsetof(rank_beat, error_len) == 168, "rank_beat's layout changed");
static_assert(sizeof(node_state) == 41848 && offsetof(node_state, beats) == 17400, "node_state's layout changed");

// A mapping of the node state file. Move-only; unmaps and closes on destruction.
//
// The file lives in a directory only its user can add names to (owned by the user, not
// a symlink, not writable by group or others; checked on the open descriptor at every
// open), and every name in it is opened relative to that descriptor with O_NOFOLLOW:
// another user on the node can neither plant a state or lock file nor swap the
// directory. Every refusal is a runtime_error whose text is one line naming the path,
// its owner and what to do.
class node_state_file {
 public:
  // Opens or creates `path` (mode 0600); creates its directory (0700) when missing.
  explicit node_state_file(const std::string& path);
  ~node_state_file();
  node_state_file(const node_state_file&) = delete;
  node_state_file& operator=(const node_state_file&) = delete;

  node_state& get() const { return *state_; }
  const std::string& path() const { return path_; }

  // Takes the publisher role without blocking; true when this object now publishes.
  // The first holder is elected by the publisher lock (a flock: it goes with a dead
  // holder); besides, a role whose holder is gone or whose heartbeat is older than
  // `stale_ms` (> 0) is taken over, and *taken_from then names the old holder's pid.
  // When the lock file itself cannot be used (not merely held by another process),
  // *problem gets one line that says why, naming the path and its owner.
  bool try_become_publisher(std::string* problem = nullptr, std::int64_t stale_ms = 0, int* taken_from = nullptr);
  // True while this object holds the role: false once another process took it over.
  bool is_publisher() const;
  // Gives the role and the lock up (the next try_become_publisher elsewhere succeeds).
  void release_publisher();

  // Whether the file is still the state this object mapped: the same size, magic and
  // version, no unknown flag bits, and no fault on its pages (a truncated file reads as
  // zeros here instead of killing the process with SIGBUS; see guard_mapping). "" when
  // intact, else one line naming the file and what is wrong.
  std::string damage() const;

  // The open file descriptor (for TRAINCTL_STATE_FD: see adopted()).
  int fd() const { return fd_.get(); }
  // Whether the file's name is gone while it is open (st_nlink 0): systemd-logind's
  // RemoveIPC=yes removes a user's /dev/shm files when their last login session on the
  // node ends. The processes that have it open keep sharing it.
  bool removed() const;
  // Whether this object opened its supervisor's copy of a removed state: when `path` is
  // missing and is the supervisor's (TRAINCTL_STATE), the file the supervisor
  // (TRAINCTL_SUPERVISOR_PID) holds open as TRAINCTL_STATE_FD is opened through /proc,
  // if it is this user's removed node state, instead of making a new one that nobody
  // would publish (a worker torchrun restarted missed both switches).
  bool adopted() const { return adopted_; }

  // Finds the slot holding (kind, path) or claims a free one; -1 when all are taken.
  int register_switch(switch_kind kind, const std::string& name, const std::string& path);

  // Removes the state and lock files when no other process has the state open.
  void unlink_if_last();

 private:
  void open_file();
  std::string path_, name_;
  owned_fd dir_fd_;
  owned_fd fd_;
  owned_fd lock_fd_;
  std::uint64_t my_id_ = 0;
  int guard_ = -1;  // slot in the SIGBUS guard
  bool adopted_ = false;
  owned_fd open_supervisors_copy() const;
  node_state* state_ = nullptr;
};

// Puts the node state's SIGBUS guard (see sigbus_guard.cpp) first again when a handler
// installed later took its place (Python's faulthandler.enable() after the Controller
// was made); that handler then runs for every fault outside a node state. True when it
// had to. Cheap (one sigaction call): the watchers call it at each wake.
bool rearm_sigbus_guard();

// A copy of the node state at `path` for a reader that must leave it as it is (trainctl
// status): read once, no lock taken (the last rank's unlink_if_last is not held up),
// nothing created. Null with *why (one line) when it is not a node state of this user.
// Each field is read whole; fields may come from moments a few microseconds apart.
std::unique_ptr<node_state> read_node_state(const std::string& path, std::string* why);

// Fills in magic, version and size (a private state that never was a file).
void init_header(node_state& ns);

// Whether the role's holder looks gone: none, a pid that no longer exists, or a
// heartbeat older than `stale_ms` (0: never by age).
bool publisher_stale(const node_state& ns, std::int64_t now_ms, std::int64_t stale_ms);

// How old a heartbeat may be before others take the role over: 4 s for a holder that
// beats every second (3 s at least for faster ones), two of its intervals and a second
// for a holder that advertises a longer one.
std::int64_t publisher_stale_after_ms(const node_state& ns);

// The hot path's validity test: a plain load of the magic (on the same cache line as
// the flags) and the flags' unknown bits. A state another program overwrote reads as
// "no flags" until the watcher notices and falls back.
inline bool has_header(const node_state& ns) {
  return __atomic_load_n(&ns.magic, __ATOMIC_RELAXED) == node_state::kMagic;
}
inline std::uint32_t valid_flags(const node_state& ns) {
  const std::uint32_t f = ns.flags.load(std::memory_order_relaxed);
  const std::uint64_t magic = __atomic_load_n(&ns.magic, __ATOMIC_RELAXED);
  return magic == node_state::kMagic && (f & ~kKnownFlags) == 0 ? f : 0;
}

// Finds the slot holding (kind, path) in `ns` or claims a free one (lock-free: any
// number of processes may register at once); -1 when all are taken. A slot is never
// freed. Also serves a process's private node state.
int claim_switch_slot(node_state& ns, switch_kind kind, const std::string& name, const std::string& path);

// The slot of the loop's phase `name` in `ns`, claimed when new (lock-free); -1 when all
// are taken by other names. `name` is a valid phase name (valid_phase_name).
int claim_phase_slot(node_state& ns, const std::string& name);
// 1 to 31 of [A-Za-z0-9_.-], not starting with '.' or '-'.
bool valid_phase_name(const std::string& name);
// Raises `longest` to `ms` when longer (a compare-and-swap loop).
void raise_to(std::atomic<std::int64_t>& longest, std::int64_t ms);

// A heartbeat slot for process `pid` in `ns` (its own slot again if it has one; a free
// one or one whose process is gone otherwise); -1 when all 64 are taken by live ones.
int claim_beat_slot(node_state& ns, std::int32_t pid);

// `text`'s first line as one line a terminal shows as it is: printable ASCII, anything
// else '?', at most `max` characters.
std::string printable_line(const std::string& text, std::size_t max);
// The error rank `b` is dying of (rank_beat::error): written once by the rank (a second
// call keeps the first, the error it is dying of), read by its supervisor ("" none).
void note_rank_error(rank_beat& b, const std::string& text);
std::string rank_error(const rank_beat& b);

// Where this user's node state files live on this node: $XDG_RUNTIME_DIR/trainctl when
// XDG_RUNTIME_DIR names a directory of this user; else /run/trainctl/<uid> when the
// SPANK plugin made it (TRAINCTL_RUN_DIR replaces /run/trainctl); else
// /dev/shm/trainctl-<uid> (TRAINCTL_SHM_DIR replaces /dev/shm, for tests), or, when
// another user took that name first, this user's private /dev/shm/trainctl-<uid>-XXXXXX
// (random, made with mkdtemp; found again by owner and mode 0700), and *note says so in
// one line.
std::string state_dir(std::string* note = nullptr);

// The default path in state_dir(): <job>.<step>-<node> under SLURM, or keyed by the
// launcher's pid for torchrun outside SLURM, or by the process itself.
std::string default_state_path();

// Removes node state files in `dir` that no process has open and that are older than
// `min_age_s`, with their lock files, lock and temporary files left without one (what a
// step killed before it could clean up left), and the stack files of processes that are
// gone, whatever their age. Only for state_dir(), which holds
// nothing else. Returns how many files it removed; a directory that is not private is
// left alone. `ended_job`: a job that has ended on this node, whose once-markers
// and node state files (<job>.<step>-<node>, when no process has them open) go at once.
// `unused`: the caller holds the directory's lock alone (the plugin's job epilog), so no
// job of the user runs on this node: every once-marker goes, those of a job that ended
// while another job of the user still held the directory too.
int sweep_stale_state(const std::string& dir, int min_age_s = 60, const std::string& ended_job = "",
                      bool unused = false);

// Whether once-marker `name` (supervisor/once_markers) is job `job`'s: once.<what>.<job>.<more>.
bool claim_of_job(const std::string& name, const std::string& job);

// state_dir(), opened (made 0700 when missing) after the checks every node state file
// gets: for what else keeps per-user, per-node files there (supervisor/once_markers).
// Throws runtime_error (one line) when the directory is refused.
owned_fd open_state_dir();

std::int64_t unix_now_ms();

}  // namespace trainctl
