// Node health: hangs, the crash culprit, and what goes into the bad-node memory. The
// supervisor's loop calls it; nothing here may stall that loop (the deadline, the
// notices and the switches go through it), so everything that reads or writes the
// shared log directory or waits for other nodes runs in a child process with a
// deadline, and the loop hears of the result when it reaps that child.
//
// The rules, each in one place (this class is their facade):
//  - A hang (check_hang here; the budgets in phase_budgets): a rank of this node whose last agreement is older than
//    --hang-timeout, or that has not reached its first agreement --hang-start-timeout
//    after it started. A zombie or another user's process is never a rank.
//  - The stacks (hang_dump): every rank's, into LOG_DIR/trainctl-<user>/stacks-<job>/,
//    directories only this user can write (see evidence_root); every node waits (bounded) for the whole job's files
//    before the action, and the job's first node says where the job is stuck and records the nodes that hold the odd
//    ranks when they are fewer than half.
//  - Stragglers (straggler_recorder): a rank found slow puts the finding in its beat;
//    the line in LOG_DIR/slow_nodes and the bad-node record are written here.
//  - The culprit of a crash (crash_culprit): only a node whose first rank death was by a
//    fault signal (SEGV, BUS, ILL, ABRT, FPE) and came before every other node's first
//    death by more than the clock skew allowance. An exit of the program (an exception),
//    an unknown cause, an order too close to call, or a death trainctl caused (a hang
//    action, a notice) records nothing, and the log says so. In a one-node job there
//    is no other node to compare with: the fault signal is only a suspicion
//    (bad_nodes.hpp, kSuspectedCrash), remembered but keeping nobody off a node.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "crash_culprit.hpp"
#include "hang_budget.hpp"
#include "hang_dump.hpp"
#include "node_state_file.hpp"
#include "owned_fd.hpp"
#include "phase_budgets.hpp"
#include "run_options.hpp"
#include "straggler_recorder.hpp"
#include "subprocess.hpp"

namespace trainctl {

class node_state_file;
struct rank_beat;

class node_health {
 public:
  using log_fn = std::function<void(const std::string&)>;
  // After a hang's dump (this node's, and the wait for the others'): the summary, for
  // the --on-notice hook and the action, which the supervisor carries out.
  using hang_fn = std::function<void(const std::string& summary)>;

  node_health(const supervisor_options& o, log_fn log, hang_fn on_hang);
  // Whether this supervisor records learnt budgets for the next task (the node's publisher).
  void set_records(std::function<bool()> f) { budgets_.set_records(std::move(f)); }
  // How long the ranks had been quiet when the last hang was found.
  std::int64_t stall_ms() const { return dump_.stall_ms(); }
  // Processes that are the supervisor's own (the --on-notice hook): never ranks.
  void set_owned_elsewhere(std::function<bool(pid_t)> f) { owned_elsewhere_ = std::move(f); }
  ~node_health();
  node_health(const node_health&) = delete;
  node_health& operator=(const node_health&) = delete;

  // The command runs (as `command`, a child of this process) with this node state.
  void started(node_state_file* state, pid_t command);
  // On every wake of the loop: how long until it wants the next call.
  std::chrono::milliseconds tick();
  // Readable when a watched rank died; the loop polls it with its own descriptors.
  int death_fd() const { return epoll_fd_.get(); }
  // A status the loop reaped: true when the child was node health's.
  bool reaped(pid_t pid, int status);
  // The node state was given up (damaged) or closed: not read any more.
  void set_state(node_state_file* state) { state_ = state; }
  // The node state was given up because of `damage` (one line): a rank's SIGBUS from
  // now on is the damaged state's, not a fault of the node.
  void state_damaged(const std::string& damage) {
    state_damage_ = damage;
    state_ = nullptr;
  }
  // Whether `pid` belongs to node health (its child and that child's group).
  bool owns(pid_t pid) const;
  // Trainctl itself told the ranks to stop or ended them: deaths from now on are not
  // findings (a rank of this node that died before, the culprit of a crash that made
  // SLURM end the step, still is).
  void trainctl_ended_ranks();
  // This node's first rank death when the program died of its own (crash_culprit's
  // program_death_status), for the run events: how, and the step that rank was at (its last check()).
  struct program_death {
    int status = -1;         // its wait status
    std::int64_t step = -1;  // -1: before any check()
    int rank = -1;           // the rank that died first on this node (-1: not known)
    std::int64_t died_ms = 0;
    std::string error;  // the error it died of, as its loop noted it (rank_beat::error), "" none
    int oom = -1;       // a SIGKILL: 1 the OOM killer's, 0 from outside the program, -1 not known (oom_watch)
  };
  // The command ended with `status`: decides on the crash culprit. May wait (bounded,
  // a few seconds) for the other nodes' evidence; the loop is over by then.
  std::optional<program_death> command_ended(int status);
  // Whether a rank on another node of this step ended in the last 2 minutes
  // (kPeerTermWindowMs): one line naming the earliest such death ("a rank on n2 ended by
  // SIGABRT 652 ms before"), "" when none is recorded (one node, no job, the log
  // directory unusable). Reads the step's crash evidence in a child, waiting 1 s at most.
  std::string peer_death() const;
  // Ends a dump still running (the command ended first).
  void abandon();
  bool hung() const { return dump_.hung(); }

 private:
  struct watched {
    owned_fd fd;               // pidfd
    std::int64_t died_ms = 0;  // when the pidfd turned readable
    int wait_status = -1;      // read from the zombie's /proc stat; -1 unknown
    int rank = -1;             // from its heartbeat slot, read at its death
    std::string error;         // the error its loop noted in that slot
  };
  // The heartbeat slot of `pid` (a crashed rank never cleared it), nullptr: none.
  const rank_beat* beat_of(pid_t pid) const;
  void log(const std::string& line) const { log_(line); }
  void watch_new_ranks();
  void on_deaths();
  void note_death(pid_t pid, std::int64_t when_ms, int wait_status);
  void check_hang();
  void check_start();
  void check_writes();
  void start_dump(const std::string& why, std::int64_t stall_began_ms, const std::string& doing);

  supervisor_options opts_;
  log_fn log_;
  hang_fn on_hang_;
  log_dir_status dir_;  // checked once, in a child (check_)
  node_state_file* state_ = nullptr;
  std::string state_damage_;
  pid_t command_ = 0;
  pid_t self_ = 0;
  owned_fd epoll_fd_;
  std::map<pid_t, watched> ranks_;                        // pids of this node's ranks (heartbeat slots)
  std::set<std::pair<pid_t, std::int64_t>> slow_writes_;  // (rank pid, step) whose slow write was said
  phase_budgets budgets_;
  bool all_started_ = false;  // every rank found has reached its first agreement
  std::chrono::steady_clock::time_point next_start_scan_{};
  bool command_is_launcher_ = false;
  std::function<bool(pid_t)> owned_elsewhere_;
  std::unique_ptr<started_child> check_;  // the log directory check
  std::chrono::steady_clock::time_point check_by_{};
  hang_dump dump_;  // a hang found, and its dump in progress
  straggler_recorder stragglers_;
  crash_culprit culprit_;
};

// --log-dir, else TRAINCTL_LOG_DIR, else SLURM_SUBMIT_DIR, else ".".
std::string resolve_log_dir(const std::string& given);

}  // namespace trainctl
