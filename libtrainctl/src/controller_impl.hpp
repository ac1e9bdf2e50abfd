// The controller's state (controller::impl), shared by the files that hold its parts;
// private to libtrainctl/src: controller.cpp (the public API, phases, straggler
// reports), vote.cpp (the vote and the decision, with the exit-reason table),
// watcher.cpp (the watcher thread: the node state, its role, the switches' removal).
#pragma once

#include "trainctl/controller.hpp"

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

#include "config_impl.hpp"
#include "gpu_memory.hpp"
#include "node_role.hpp"
#include "node_state.hpp"
#include "node_state_file.hpp"
#include "run_events.hpp"
#include "run_log.hpp"
#include "signals.hpp"
#include "snapshot_store.hpp"
#include "step_timing.hpp"
#include "straggler_record.hpp"
#include "switch_fields.hpp"
#include "switch_paths.hpp"

#include "exit_reasons.hpp"
#include "log_line.hpp"
#include "loop_clock.hpp"
#include "owned_fd.hpp"
#include "pending_writes.hpp"
#include "watcher_thread.hpp"

namespace trainctl {

constexpr std::size_t kMaxLocalSwitches = kVoteLen - kVoteSwitch0;

// The process's last resume_path() look: the step it found (-1 none, -2 no look) and
// the saves it could not trust (saves.cpp).
std::pair<std::int64_t, int> last_resume_look();

// How many ranks the launcher says there are (the first variable set, as for the rank):
// WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMIX_SIZE, PMI_SIZE, SLURM_NTASKS; 1 when none is.
long world_size();

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

// The switches this rank watches. They belong to the rank's thread (check, should_save,
// add_switch); the watcher takes them only to fall back to a private state and to remove
// a consumed save switch. The hot path (should_exit) never takes the lock.
struct switch_list {
  mutable std::recursive_mutex mu;
  std::vector<local_switch> list;
  std::atomic<std::int64_t> remove_at_ms{0};  // rank 0: when the watcher removes the consumed file
};

// This rank's snapshots in memory (snapshots.cpp): the writer of its two slots, made at
// its first snapshot, and whether a snapshot not kept was said already.
struct snapshot_slots {
  std::unique_ptr<snapshot_writer> writer;
  bool not_kept_said = false;
};

// Where the rank's loop is: the phases it opened, the save trainctl asked for, its calls.
struct loop_position {
  // The phases the loop opened (phase_begin), innermost last: the beat's phase value and
  // when it began; the beat shows the innermost, or a save trainctl asked for.
  std::vector<std::pair<std::int32_t, std::int64_t>> open_phases;
  // Where in open_phases a phase named "restore" sits (the loop loading its checkpoint):
  // its end is a run event, the report's checkpoint restore. SIZE_MAX: none open.
  std::size_t restore_at = SIZE_MAX;
  bool phase_slots_full_said = false;
  std::int64_t save_started_us = 0;  // when a save or exit was decided, until the next call
  bool exit_save_timed = false;      // the save at the exit decision is being (or was) timed
  // The save that ended at this rank's last call was being made when its supervisor went
  // away: the exit that brings needs no other save. Voted at the next agreement.
  bool saved_as_supervisor_went = false;
  std::int64_t quiet_since_ms = 0;  // the last agreement or phase change of this rank (unix ms)
  std::int64_t last_check_ms = 0;   // the last check() (unix ms, coarse; 0: none)
  bool first_step_noted = false;
  std::int64_t last_step = -1;
};

// The supervisor above this rank, and the notice signals it relays to it.
struct supervisor_link {
  owned_fd fd;                    // pidfd of this rank's supervisor, if one is known
  bool present = false;           // a supervisor was there at the start (set before the watcher starts)
  std::uint64_t signal_mask = 0;  // the notice signals this rank catches
  // When this rank first caught a notice signal while supervised (steady us; 0: none).
  mutable std::atomic<std::int64_t> signal_caught_us{0};
  std::atomic<bool> gone{false};  // the watcher saw the supervisor die
};

struct controller::impl {
  config::impl cfg;
  std::unique_ptr<node_state_file> file;      // the shared node state (kept mapped to the end), and
  std::unique_ptr<node_state> private_state;  // a private one when it fails or is damaged
  std::atomic<node_state*> ns{nullptr};       // the one in use (the hot path's one load)
  std::atomic<std::uint32_t> local_bits{0};
  std::atomic<std::int64_t> local_deadline_ms{0};
  switch_list sw;
  decision decided;           // sticky exit
  rank_beat* beat = nullptr;  // this process's heartbeat in the node state
  loop_position pos;
  step_timing timing{steady_us};  // work per step, stragglers, rank 0's step times
  supervisor_link sup;
  std::int64_t known_deadline_ms = 0;  // the node state's deadline as last read intact (watcher only)
  watcher_thread watcher;
  run_log events{[this] { wake(); }};        // rank 0's events for `trainctl report`, stragglers to record
  pending_writes writes;                     // saves handed off, committed when their write ends (saves.cpp)
  std::atomic<bool> writes_given_up{false};  // a wait for them reached its bound and said so
  snapshot_slots snaps;                      // this rank's snapshots in memory (snapshots.cpp)

  // Whether a notice signal this rank caught counts as its own exit reason now.
  bool caught_signal_counts() const noexcept;
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
    const bool slot = switch_fields::holds(n, s.slot, s.exit ? switch_kind::exit : switch_kind::save);
    if (!s.exit) return std::max(s.floor, slot ? switch_fields::count(n, s.slot) : 0);
    std::int64_t t = s.initial;
    if (slot) t = std::max(t, switch_fields::token(n, s.slot));
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
  // The exit the reduced vector `r` asks for (a kill switch, then the reasons in order,
  // then another exit switch), once: decided, noted and said by rank 0.
  void decide_exit(std::int64_t step, const std::int64_t* r);
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
  // The rank's part of a save commits (saved(), or a write that ended well): false, with
  // one line, when its marker cannot be written. `strict`: a path that is no checkpoint
  // of this user's throws std::invalid_argument (saved()); else it is said too (a write
  // that ended on another thread has no caller to tell).
  bool commit(std::int64_t step, const std::string& path, std::int64_t began_us, bool strict);
  // The beat's view of the pending writes (count, the oldest's step and start).
  void publish_pending();
  // The rank's last resume_path() look (any process-wide call), for its first_step event.
  static void note_resume(std::int64_t step, int untrusted);
  // Shows `phase` in this rank's beat from now on (the supervisor's hang clock restarts).
  void show_phase(std::int32_t phase);
  std::int32_t current_phase() const {
    return pos.save_started_us != 0  ? kPhaseSave
           : pos.open_phases.empty() ? kPhaseTraining
                                     : pos.open_phases.back().first;
  }
  void note_step_times();
  void report_straggler(std::int64_t step, const step_timing::verdict& v);
  std::string straggler_dir() const;
  void note_event(const char* what, std::int64_t step, std::int64_t took_ms, const std::string& reason);
  void note_notices(const node_state& n, std::uint32_t agreed = 0);
  void wake() const { watcher.wake(); }
};

}  // namespace trainctl
