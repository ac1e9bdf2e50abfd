// Every kind of run event (run_events.hpp), its name on disk and what it carries: the
// one table that the writers (rank 0's controller, each node's supervisor) make events
// from (make_run_event) and the readers (trainctl report, lint and drill, the
// no-progress breaker, the run id) match against. A kind's name is part of the file format: lines written by an
// older trainctl keep theirs, so a name is never changed, only added.
#pragma once

namespace trainctl::run_event_kind {

// From rank 0's controller (libtrainctl):
inline constexpr char kFirstStep[] = "first_step";      // its first check(): step; resumed, untrusted, program
inline constexpr char kSave[] = "save";                 // a save agreed: step, reason (why)
inline constexpr char kExit[] = "exit";                 // an exit agreed (a save first): step, reason
inline constexpr char kSaved[] = "saved";               // that save ended: took_ms
inline constexpr char kRestore[] = "restore";           // a marked restore phase ended: step, took_ms
inline constexpr char kCommit[] = "commit";             // a save committed on rank 0 (ctl.saved): step, took_ms
inline constexpr char kWriteCut[] = "write_cut";        // an asynchronous write cut: step, took_ms, reason; or, from a
                                                        // supervisor, a rank's write the run's end cut: rank, node
inline constexpr char kWriteFailed[] = "write_failed";  // an asynchronous write failed: step, took_ms, text
inline constexpr char kStepTimes[] = "step_times";      // as it ends: steps, median_us, mad_us, outliers, excess_us
inline constexpr char kEnd[] = "end";                   // the controller ends: step (the last), took_ms (since it)
inline constexpr char kNotice[] = "notice";             // a notice reached the node state: reason (deadline, preempted,
                                                        // signal, memory; hang from a supervisor, took_ms the stall)

// From a node's supervisor:
inline constexpr char kTaskStart[] = "task_start";  // the batch script begins: task, restart, since
inline constexpr char kTaskEnd[] = "task_end";      // it ended: task, restart, node, reason (ok, failed, preempted,
                                                    // no-progress: run_progress.hpp)
inline constexpr char kCompute[] = "compute";       // each rank's work per step: works, steps, slowest_us, marked
inline constexpr char kDeath[] = "death";           // the node's first rank death trainctl did not cause: step, reason
                                                    // (SIGKILL, ... or exit), node, rank, at, status, oom, boot,
                                                    // synced, max_error_us, text
inline constexpr char kCommitted[] = "committed";   // every rank of the node committed: step, took_ms, ranks
inline constexpr char kUncommitted[] = "uncommitted";  // a rank did not: step, rank, last, node
inline constexpr char kHeld[] = "held";                // the kill switch held the array's pending tasks: tasks
inline constexpr char kSnapshots[] = "snapshots";      // a rank died; the node's snapshots written out as saves:
                                                       // step (the newest), node, ranks, oldest

// Where the figures come from: first_step's program is program_id() (run_events.hpp);
// step_times' are step_times.hpp's; death's oom is oom_watch.hpp's verdict, and boot,
// synced and max_error_us are the node's clock as health/step_presence.hpp's clock_facts
// read it, for the order of several nodes' deaths; task_start's since is run_id.hpp's
// array_since.

}  // namespace trainctl::run_event_kind
