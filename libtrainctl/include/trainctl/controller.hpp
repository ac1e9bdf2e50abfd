// trainctl's C++ API: the flags a training loop polls.
//
//   trainctl::controller ctl;                      // configured from the environment
//   for (long step = 0;; ++step) {
//     train_step();
//     auto d = ctl.check(step, all_reduce_max);    // the same answer on every rank
//     if (d.save) save_checkpoint(step);
//     if (d.exit) { save_checkpoint(step); break; }  // d.reason says why
//   }
//
// The C ABI in trainctl.h is the stable interface (and what Python binds); this header
// is for C++ programs built against the same version of the library.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#if defined(TRAINCTL_BUILDING)
#define TRAINCTL_API __attribute__((visibility("default")))
#else
#define TRAINCTL_API
#endif

namespace trainctl {

// Length of the vote vector that check() reduces with MAX across ranks.
constexpr std::size_t kVoteLen = 24;

// What to watch and when to ask for an exit. Starts from the environment; every key
// can be overridden in code with set(), which validates like the environment does.
//
//   key               environment               value
//   kill_switch       KILL_SWITCH               path; its existence asks every rank to exit
//   save_switch       SAVE_SWITCH               path; each touch asks for one save
//   exit_switches     TRAINCTL_EXIT_SWITCHES    name=path,...  (user exit switches)
//   save_switches     TRAINCTL_SAVE_SWITCHES    name=path,...  (user save switches)
//   deadline          TRAINCTL_DEADLINE         unix seconds; exit once now >= deadline
//   memory_min_free   TRAINCTL_MEMORY_MIN_FREE  5% or 2G left of the memory domain's limit
//                     (memory_threshold, TRAINCTL_MEMORY_THRESHOLD: deprecated, % in use)
//   gpu_min_free      TRAINCTL_GPU_MIN_FREE     5% or 1G free on the fullest GPU (NVML)
//   poll_interval     TRAINCTL_POLL_INTERVAL    how often the node's publisher stats (10s)
//   signals           TRAINCTL_SIGNALS          notice signals to catch (USR1,TERM); none
//   check_every       TRAINCTL_CHECK_EVERY      steps between agreements across ranks (10)
//   state_path        TRAINCTL_STATE            node state file (per job step and node)
//   rank              RANK, OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID (the first set)
//                                               this process's rank; rank 0 removes switches
//   world_size        WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMIX_SIZE, PMI_SIZE or SLURM_NTASKS (the first set)
//                                               the ranks whose saves make one checkpoint (saved(); 0: those)
//   straggler_factor  TRAINCTL_STRAGGLER_FACTOR slowest/fastest rank's work per step that makes the
//                                               slowest a straggler (1.5); 0: off
//   straggler_agreements TRAINCTL_STRAGGLER_AGREEMENTS  agreements in a row before it is reported (5)
//   log_dir           TRAINCTL_LOG_DIR          where slow_nodes is written ($SLURM_SUBMIT_DIR, else .)
class TRAINCTL_API config {
 public:
  // Reads the environment. A malformed value is reported as one line on stderr naming
  // the variable, and its documented fallback is used; this never throws.
  static config from_env();
  config();
  // Throws std::invalid_argument with one line naming the key, the value and what is accepted.
  void set(std::string_view key, std::string_view value);
  std::string get(std::string_view key) const;
  // Lines describing malformed environment values (already printed by from_env()).
  const std::vector<std::string>& warnings() const;

 private:
  // The parsed settings: the library's own, not part of the installed API.
  struct impl;
  friend class controller;
  std::shared_ptr<impl> impl_;
};

struct decision {
  bool exit = false;
  bool save = false;
  // With exit: what there is to keep is saved already, so the loop exits without a save.
  // For no-progress (nothing is new since the checkpoint), and when a rank's supervisor
  // went away during the save the ranks were making: that save is the last.
  bool saved = false;
  std::string reason;       // kill-switch, deadline, preempted, memory, hang, peer-failed, signal, a switch name,
                            // or no-progress (this run resumed where the last ones failed: exit, no save)
  std::string save_reason;  // save-switch or a user save switch's name
};

class TRAINCTL_API controller {
 public:
  // MAX-reduce `len` integers in place across all ranks (all_reduce with MAX).
  using reducer = std::function<void(std::int64_t* vote, std::size_t len)>;

  explicit controller(const config& cfg = config::from_env());
  ~controller();
  controller(const controller&) = delete;
  controller& operator=(const controller&) = delete;

  // This process's view, no agreement: a few atomic loads, no system call, no lock.
  bool should_exit() const noexcept;
  // True once per touch of a save switch (consumed by this call); no agreement.
  bool should_save() noexcept;  // NOLINT(bugprone-exception-escape): see vote.cpp

  // The agreed decision at a step boundary. With a reducer, every check_every steps
  // (other steps answer "nothing new"); without one, at every step, from this process's
  // view: then each touch of a save switch is one save (one per call while several are
  // pending), so independent ranks save as often as one another.
  decision check(std::int64_t step, const reducer& reduce = {});
  // The two halves of check(), for callers that reduce on their own: vote() fills
  // `vote` and says whether an agreement is due at this step; decide() takes the
  // reduced vector. Every rank must call both at the same steps.
  bool vote(std::int64_t step, std::int64_t* vote, std::size_t len);
  decision decide(std::int64_t step, const std::int64_t* reduced, std::size_t len);

  // The rank's own compute, for the straggler finding: mark where each step's work
  // begins and ends (forward and backward, not the gradient all_reduce that waits for
  // the slowest rank). Once a step is marked, a rank's time per step is its marked
  // time, not the wall time between agreements, in which synchronous training makes
  // every rank as slow as the slowest. Any thread may call them (a DDP communication
  // hook calls compute_end); a few atomic operations each.
  void compute_begin() noexcept;
  void compute_end() noexcept;

  // A phase of the loop other than training (an evaluation, the loop's own save): the
  // supervisor judges a quiet rank inside it by the phase's own hang budget (set with
  // --hang-phase-timeout, else learnt from its longest duration in this job array), not
  // by --hang-timeout. "save" is the save phase trainctl's own save decisions open.
  // Mark it on every rank, including ranks that only wait for it. Phases nest; the
  // innermost counts. phase_begin throws std::invalid_argument for a bad name
  // (1-31 of [A-Za-z0-9_.-]), phase_end when none is open.
  void phase_begin(const std::string& name);
  void phase_end();

  // This rank's part of the save at `step` is in place at `path` (the checkpoint's
  // directory or file): call it on every rank after the save (trainctl.h: trainctl_saved).
  // True when committed; false, with one line logged, when its marker cannot be written
  // (the loop trains on: the save is simply not committed). Throws std::invalid_argument
  // when `path` is not a checkpoint of this user's.
  bool saved(std::int64_t step, const std::string& path);

  // An asynchronous save (trainctl.h: trainctl_save_begin): this rank's part of the save
  // at `step` goes on being written at `path` after this call, from the loop's thread.
  // Returns the write's ticket; the write is pending until save_end(ticket), which any
  // thread may call (a writer thread, a future's callback): committed then when `error`
  // is "", else nothing is committed and one line names the save and the error. The
  // save counts from its start (the decision, or the loop's "save" phase) to its commit
  // for --graceful-exit=auto, the report and the hang clock. A rank's marker already at
  // `path` goes at once: a save redone in place is uncommitted until its commit.
  std::uint64_t save_begin(std::int64_t step, const std::string& path);
  // A save of this rank begins at `path` and is committed later with saved() (a
  // framework that says only after the save that it saved): this rank's marker already
  // at `path` goes now, so a save redone in place is uncommitted until it is committed
  // again (trainctl.h: trainctl_save_starts).
  void save_starts(const std::string& path);
  // True when the write `ticket` ended well and is committed; false otherwise (one line
  // logged). Throws std::invalid_argument for a ticket that is not pending.
  bool save_end(std::uint64_t ticket, const std::string& error = "");
  // Waits for this rank's pending writes: at most `timeout_s` (< 0: no bound of its own),
  // and never past two seconds before the job's end the supervisor knows (EndTime), so
  // that a write the end will cut is said before it is cut. Logs how long it waited.
  // Returns how many writes are still pending. The destructor calls it.
  std::size_t wait_for_saves(double timeout_s = -1);
  // This rank's writes pending now.
  std::size_t pending_saves() const;

  // A snapshot of this rank's state at `step` (`size` bytes), kept in host memory on the
  // node, never written to a file system while the rank lives (trainctl.h:
  // trainctl_snapshot). When a rank of the task dies (an exception, a signal, the launcher
  // ending it after a peer died, --hang-action=end-step), the node's supervisor writes
  // each of its ranks' two newest snapshots into `ckpt_dir` as saves (snapshot-STEP, one
  // file per rank), committed as saved() commits, unless a save as new is committed
  // there already; resume_path() counts them like any save. True when kept; false, with
  // one line logged the first time, when not (no supervisor on this node, or no memory
  // for it: the snapshot before stays kept).
  bool snapshot(std::int64_t step, const void* data, std::size_t size, const std::string& ckpt_dir);

  // The error this rank is about to die of (trainctl.h: trainctl_note_error): its first
  // line goes into the rank's heartbeat slot, where the supervisor's crash finding and
  // `trainctl report` name it. The first call counts.
  void note_error(const std::string& text);
  // The newest checkpoint in `dir` that every rank committed with saved(); "" for none
  // (a fresh start). Rank 0 logs one line when saves there cannot be trusted (how many,
  // why) or others can replace them. trainctl.h: trainctl_resume_path.
  static std::string resume_path(const std::string& dir);

  void set_deadline(double unix_seconds);  // 0 clears it
  void add_switch(bool exit, const std::string& name, const std::string& path);
  void set_rank(int rank);
  int check_every() const;
  const std::string& state_path() const;
  // The run's id, the same in every task of an array and every requeue (trainctl.h:
  // trainctl_run_id); "" outside a SLURM job.
  static std::string run_id();
  // Metadata requests (stat calls) made by this node's publishers so far.
  std::uint64_t stat_calls() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

// compute_begin() ... compute_end() over a scope.
class compute_section {
 public:
  explicit compute_section(controller& c) noexcept : c_(c) { c_.compute_begin(); }
  ~compute_section() { c_.compute_end(); }
  compute_section(const compute_section&) = delete;
  compute_section& operator=(const compute_section&) = delete;

 private:
  controller& c_;
};

// phase_begin(name) ... phase_end() over a scope: { trainctl::phase_section p(ctl, "eval"); evaluate(); }
class phase_section {
 public:
  phase_section(controller& c, const std::string& name) : c_(c) { c_.phase_begin(name); }
  ~phase_section() {
    try {
      c_.phase_end();
    } catch (...) {  // only when the loop ended this phase itself: nothing left to end
    }
  }
  phase_section(const phase_section&) = delete;
  phase_section& operator=(const phase_section&) = delete;

 private:
  controller& c_;
};

}  // namespace trainctl
