// Node health: hangs, the crash culprit, and what goes into the bad-node memory. The
// supervisor's loop calls it; nothing here may stall that loop (the deadline, the
// notices and the switches go through it), so everything that reads or writes the
// shared log directory or waits for other nodes runs in a child process with a
// deadline, and the loop hears of the result when it reaps that child.
//
// The rules, each in one place below:
//  - A hang (check_hang): a rank of this node whose last agreement is older than
//    --hang-timeout, or that has not reached its first agreement --hang-start-timeout
//    after it started. A zombie or another user's process is never a rank.
//  - The stacks (dump_work): every rank's, into LOG_DIR/trainctl-<user>/stacks-<job>/,
//    directories only this user can write (see evidence_root); every node waits (bounded) for the whole job's files
//    before the action, and the job's first node says where the job is stuck and records the nodes that hold the odd
//    ranks when they are fewer than half.
//  - Stragglers (record_stragglers): a rank found slow puts the finding in its beat;
//    the line in LOG_DIR/slow_nodes and the bad-node record are written here.
//  - The culprit of a crash (judge_crash): only a node whose first rank death was by a
//    fault signal (SEGV, BUS, ILL, ABRT, FPE) and came before every other node's first
//    death by more than the clock skew allowance. An exit of the program (an exception),
//    an unknown cause, an order too close to call, or a death trainctl caused (a hang
//    action, a notice) records nothing, and the log says so. In a one-node job there
//    is no other node to compare with: the fault signal is only a suspicion
//    (bad_nodes.hpp, kSuspectedCrash), remembered but keeping nobody off a node until
//    suspicions from other jobs make it evidence.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "hang_budget.hpp"
#include "run_options.hpp"
#include "subprocess.hpp"

namespace trainctl {

class node_state_file;

class node_health {
 public:
  using log_fn = std::function<void(const std::string&)>;
  // After a hang's dump (this node's, and the wait for the others'): the summary, for
  // the --on-notice hook and the action, which the supervisor carries out.
  using hang_fn = std::function<void(const std::string& summary)>;

  node_health(const supervisor_options& o, log_fn log, hang_fn on_hang);
  // Whether this supervisor records learnt budgets for the next task (the node's publisher).
  void set_records(std::function<bool()> f) { records_ = std::move(f); }
  // How long the ranks had been quiet when the last hang was found.
  std::int64_t stall_ms() const { return stall_ms_; }
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
  int death_fd() const { return epoll_fd_; }
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
  // The command ended with `status`: decides on the crash culprit. May wait (bounded,
  // a few seconds) for the other nodes' evidence; the loop is over by then.
  void command_ended(int status);
  // Whether a rank on another node of this step ended in the last 2 minutes
  // (kPeerTermWindowMs): one line naming the earliest such death ("a rank on n2 ended by
  // SIGABRT 652 ms before"), "" when none is recorded (one node, no job, the log
  // directory unusable). Reads the step's crash evidence in a child, waiting 1 s at most.
  std::string peer_death() const;
  // Ends a dump still running (the command ended first).
  void abandon();
  bool hung() const { return hung_; }

 private:
  struct watched {
    int fd = -1;               // pidfd
    std::int64_t died_ms = 0;  // when the pidfd turned readable
    int wait_status = -1;      // read from the zombie's /proc stat; -1 unknown
  };
  void log(const std::string& line) const { log_(line); }
  void watch_new_ranks();
  void on_deaths();
  void note_death(pid_t pid, std::int64_t when_ms, int wait_status);
  void check_hang();
  void check_start();
  void start_dump(const std::string& why, std::int64_t stall_began_ms, const std::string& doing);
  std::string phase_name(std::int32_t phase) const;
  void learn_budgets();
  hang_budget budget_of(const std::string& name);
  void finish_dump(const std::string& output);
  std::string evidence_leaf() const;
  void publish_first_death();
  void record_stragglers();
  void settle_evidence();
  static bool judge_first_death(int fd, const std::string& me, std::int64_t mine, int st, pid_t pid, std::int64_t skew,
                                const std::string& job, bool alone, std::ostringstream& out);
  std::string run_key() const;

  supervisor_options opts_;
  log_fn log_;
  hang_fn on_hang_;
  std::string log_dir_;
  std::string log_dir_problem_;  // "" when usable (checked once, in a child)
  bool log_dir_checked_ = false;
  bool log_dir_group_ = false;
  node_state_file* state_ = nullptr;
  std::string state_damage_;
  pid_t command_ = 0;
  pid_t self_ = 0;
  int epoll_fd_ = -1;
  std::map<pid_t, watched> ranks_;  // pids of this node's ranks (heartbeat slots)
  pid_t first_dead_ = 0;            // the first watched rank seen dead, 0: none yet
  std::int64_t first_death_ms_ = 0;
  int first_death_status_ = -1;
  hang_rules rules_;
  std::string times_path_;                           // the job array's store of phase times; "" none
  std::map<std::string, std::int64_t> learnt_;       // the longest of each phase known (store + node state)
  std::map<std::string, std::int64_t> recorded_;     // the longest known to be in the store
  std::map<std::string, std::int64_t> budget_said_;  // the budget last said in the log, per phase
  std::function<bool()> records_;
  std::chrono::milliseconds training_budget_{0}, shortest_phase_budget_{0};
  std::int64_t stall_ms_ = 0;
  std::int64_t quiet_before_ = 0;     // the longest training quiet time earlier tasks recorded (auto)
  std::int64_t caused_since_ms_ = 0;  // when trainctl first told the ranks to stop or ended them
  bool ending_ = false;               // command_ended runs: its child writes this node's evidence
  bool hung_ = false;
  std::int64_t hung_since_ms_ = 0;  // when the hang was found: only later beats end it
  bool all_started_ = false;        // every rank found has reached its first agreement
  std::chrono::steady_clock::time_point next_start_scan_{};
  bool command_is_launcher_ = false;
  std::function<bool(pid_t)> owned_elsewhere_;
  std::unique_ptr<started_child> check_;  // the log directory check
  std::chrono::steady_clock::time_point check_by_{};
  std::unique_ptr<started_child> evidence_;  // writes this node's first death for the others
  std::unique_ptr<started_child> dump_;      // a hang's dump in progress
  std::unique_ptr<started_child> slow_;      // writes the stragglers' findings (slow_nodes, bad nodes)
  std::chrono::steady_clock::time_point slow_by_{};
  std::map<pid_t, std::int64_t> slow_seen_;  // per rank: the findings its beat showed that were taken
  std::chrono::steady_clock::time_point dump_by_{};
};

// --log-dir, else TRAINCTL_LOG_DIR, else SLURM_SUBMIT_DIR, else ".".
std::string resolve_log_dir(const std::string& given);

// The wait status of zombie `pid` from /proc/<pid>/stat (exit_code, field 52): -1 when
// the process is not a zombie (or no longer there).
int zombie_wait_status(pid_t pid);
// Whether `pid` is a live process of this user: not gone, not a zombie, not another
// user's (kill(pid, 0) says yes to all three).
bool live_process_of_mine(pid_t pid);
// A fault signal: a death by it is evidence against the node it ran on.
bool is_fault_signal(int sig);

}  // namespace trainctl
