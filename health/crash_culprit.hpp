// The culprit of a crash (the rule: node_health.hpp): this node's first rank death,
// written at once into the step's crash evidence for the other nodes (in a child: the
// log directory may stall), beside this node's sign of life (step_presence.hpp), and
// judged against theirs when the command ended (crash_order.hpp). A node is blamed only
// when its first death was by a fault signal, every node gave evidence, and it came
// first by more than the clocks may differ; trainctl's own ends, exits and unknown
// causes blame nobody.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <sstream>
#include <string>

#include "oom_watch.hpp"
#include "run_options.hpp"
#include "step_presence.hpp"
#include "subprocess.hpp"

namespace trainctl {

// The log directory, as node health checked it (in a child, at the start).
struct log_dir_status {
  std::string dir;
  std::string problem;   // "" when usable (or not known yet)
  bool checked = false;  // the check answered
  bool group = false;    // shared with the group (files 0640)
};

// Names one run of a step's supervisor: job.restart, or the pid without a job.
std::string run_key(const std::string& job_id, pid_t self);

class crash_culprit {
 public:
  using log_fn = std::function<void(const std::string&)>;
  crash_culprit(const supervisor_options& o, const log_dir_status& dir, const log_fn& log);
  void started(pid_t self) { self_ = self; }
  // On every wake of the supervisor's loop: takes the OOM kill count and renews this
  // node's sign of life in a step of several nodes (step_presence.hpp). How long until
  // it wants the next call.
  std::chrono::milliseconds tick();

  // A rank of this node died (how: a wait status, -1 unknown): the first is this node's
  // evidence.
  void rank_died(pid_t pid, std::int64_t when_ms, int wait_status);
  // Trainctl itself told the ranks to stop or ended them: deaths from now on are no
  // findings.
  void trainctl_ended(std::int64_t now_ms) {
    if (caused_since_ms_ == 0) caused_since_ms_ = now_ms;
  }
  // See node_health::peer_death.
  std::string peer_death() const;

  struct end_facts {
    int status = 0;     // the command's wait status
    pid_t command = 0;  // the command: the rank itself unless a launcher
    bool command_is_launcher = false;
    bool hung = false;                          // a hang was found: trainctl ends the ranks
    std::function<std::string()> state_damage;  // the node state's damage ("" none), asked only for a SIGBUS
    std::function<int(pid_t)> rank_of;          // the rank a process was (its beat slot), -1: not known
  };
  // The command ended: judges this node (may wait a few seconds for the other nodes).
  void command_ended(const end_facts& f);
  // After command_ended: this node's first rank death when the program died of its own
  // (not by trainctl's doing, not of trainctl's damaged state): its wait status, or -1.
  int program_death_status() const { return program_death_status_; }
  // This node's first rank death seen (0: none), and when.
  pid_t first_dead() const { return first_dead_; }
  std::int64_t first_death_ms() const { return first_death_ms_; }
  // Whether that death, a SIGKILL, was the OOM killer's (1), from outside the program
  // (0), or not known (-1; also for any other death): oom_watch.hpp.
  int first_death_oom() const { return first_death_oom_; }

  // A status the loop reaped: true when it was the evidence writer's or the sign of
  // life's.
  bool reaped(pid_t pid, int status);
  // Its children: the evidence writer and the sign of life's (0: none).
  pid_t writer_pid() const { return evidence_ ? evidence_->pid() : 0; }
  pid_t presence_pid() const { return presence_.writer_pid(); }

 private:
  void publish_first_death();
  void note_oom();  // first_death_oom_ for the first death as it stands
  bool sigbus_of_damaged_state(const end_facts& f);
  void settle_evidence();
  std::string evidence_leaf() const;
  // The first death: when (mine), how (st), which process and rank.
  struct death {
    std::int64_t ms = 0;
    int status = -1;
    pid_t pid = 0;
    int rank = -1;
  };
  static bool judge_first_death(int fd, const std::string& me, const death& first, std::int64_t skew_override,
                                const std::string& job, bool alone, std::ostringstream& out);
  // The same array's rank died first on another node before: those findings are
  // forgiven, and this one is a suspicion. Returns its reason then, else "".
  static std::string when_the_crash_follows_the_rank(const std::string& path, const std::string& me, const death& first,
                                                     const std::string& how, const std::string& array,
                                                     std::ostringstream& out);

  const supervisor_options& opts_;
  const log_dir_status& dir_;
  log_fn log_;
  pid_t self_ = 0;
  pid_t first_dead_ = 0;  // the first rank of this node seen dead, 0: none yet
  std::int64_t first_death_ms_ = 0;
  int first_death_status_ = -1;
  int first_death_oom_ = -1;
  int program_death_status_ = -1;            // see program_death_status()
  std::int64_t caused_since_ms_ = 0;         // when trainctl first told the ranks to stop or ended them
  bool ending_ = false;                      // command_ended runs: it writes this node's evidence itself
  std::unique_ptr<started_child> evidence_;  // writes this node's first death for the others
  step_presence presence_;                   // this node's sign of life for the others
  oom_watch oom_;                            // the OOM killer's count, taken each tick
};

}  // namespace trainctl
