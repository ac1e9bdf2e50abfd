// The node state's layout: one small shared-memory file per job step and node, written
// by one publisher (the supervisor, or else the first rank process that takes the
// publisher lock) and read by every rank process on the node with plain atomic loads.
// The file that maps it is node_state_file.hpp; each concern's fields are read and
// written only in its home (notice_fields.hpp, beat_fields.hpp, ...: the comments below
// say what a field holds, the homes say who writes and reads it and in what order).
//
// Layout is versioned (kVersion); readers refuse a file with another magic, version or
// size rather than misread it. All fields are lock-free atomics; the layout is the same
// for every process of one build because it only holds fixed-size types.
#pragma once

#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

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

// Fills in magic, version and size (a private state that never was a file).
inline void init_header(node_state& ns) {
  ns.magic = node_state::kMagic;
  ns.version = node_state::kVersion;
  ns.size = sizeof(node_state);
}

// Whether `ns` starts as a node state does: a plain load of the magic (on the same cache
// line as the flags: valid_flags in notice_fields.hpp is the hot path's test).
inline bool has_header(const node_state& ns) {
  return __atomic_load_n(&ns.magic, __ATOMIC_RELAXED) == node_state::kMagic;
}

// Unix ms, the time base of every time the node state holds.
inline std::int64_t unix_now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

}  // namespace trainctl
