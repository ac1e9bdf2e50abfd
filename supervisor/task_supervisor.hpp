// The supervisor of one task (supervisor.hpp's run_supervised), as one class whose parts
// live in files by concern: task_supervisor.cpp (its loop, the node state, the end),
// notices.cpp (signals, the controller's answers, telling the ranks), endtime.cpp
// (EndTime, the deadline, the learnt save). Private to supervisor/.
#pragma once

#include <sys/signalfd.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "deadline_tracker.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "graceful_auto.hpp"
#include "node_health.hpp"
#include "node_role.hpp"
#include "node_state.hpp"
#include "node_state_file.hpp"
#include "notice_hook.hpp"
#include "publisher_fields.hpp"
#include "run_end.hpp"
#include "run_options.hpp"
#include "slurm_job.hpp"
#include "task_log.hpp"
#include "task_metrics.hpp"
#include "task_processes.hpp"

namespace trainctl {

class task_supervisor {
 public:
  explicit task_supervisor(const supervisor_options& o);
  int run(char* const* argv, pid_t adopt, int run_id_fd);

 private:
  using clock = std::chrono::steady_clock;

  // supervisor.cpp: the loop and the node state.
  int start(char* const* argv, pid_t adopt, int run_id_fd);  // -1: started; else the status to end with
  std::chrono::milliseconds next_wake(std::chrono::milliseconds health_wait);
  std::chrono::milliseconds turn();  // what fell due after a wait; the health's next wait
  int finish();
  std::string decided_run_id();
  void export_environment(const std::string& run);
  void open_state();
  void take_publisher_role();
  void look_after_state();
  void watch_publisher();
  void close_state();
  void settle_rank_files();
  void reap();
  void kill_ranks();
  void after_hang_dump(const std::string& summary);
  void open_metrics(const std::string& run);
  void write_metrics();
  int loop_fd();  // the loop's one descriptor: the signals, the ranks' deaths, the publisher's pidfd
  // The supervisor's own helpers: the hook, a stacks or evidence child, a query.
  bool is_helper(pid_t p) const { return hook_.owns(p) || health_.owns(p) || p == query_.pid(); }
  bool publishes() const { return role_ && role_->publishes(); }
  // Whether this supervisor holds the array's pending tasks when the kill switch ends
  // its run: the batch step's, and the first task's of a step (trainctl-run's batch
  // script may not know the switch).
  bool holds_array() const {
    return !opts_.kill_switch.empty() && (opts_.batch || env_text(env_var::kSlurmProcid) == "0");
  }

  // notices.cpp: signals, the controller's answers, and telling the ranks.
  void handle_signal(const signalfd_siginfo& si);
  void start_query(const char* why);
  void on_job_answer(const std::optional<job_times>& jt, const std::string& error);
  void resolve_notice(const char* why);
  void expire_waits();  // a query or a notice that waited too long for the controller
  void fire(std::uint32_t flag, const char* why);
  void run_hook(std::uint32_t flag);
  void follow_node_flags();

  // endtime.cpp: EndTime, the deadline, and the save time learnt for it.
  void set_end_time(std::int64_t end, std::int64_t limit_s, bool moved);
  void adopt_end_news();
  void publish_deadline();
  void check_deadline();
  // The graceful exit for a time limit (auto: learnt), and why (auto only); none without
  // --graceful-exit.
  std::optional<graceful_exit_value> graceful_exit(std::int64_t limit_s) const;
  void learn_save_time();
  void learn_cut_save();
  bool tracks_endtime() const { return !opts_.job_id.empty() && opts_.graceful_exit.count() != 0; }
  bool graceful_is_auto() const { return opts_.graceful_exit == option::kGracefulExitAuto; }
  // Whether this supervisor reads EndTime and preemption itself: always, unless another
  // supervisor on the node publishes them into a node state this one shares. No node
  // state problem (a refused file, a lock held by a rank) may cost a notice.
  bool reads_job_itself() const { return publishes() || !state_ || !publisher_fields::supervised(state_->get()); }

  supervisor_options opts_;
  task_log log_;
  notice_hook hook_;
  node_health health_;
  run_end end_;
  task_processes procs_;
  deadline_tracker dl_;
  std::unique_ptr<graceful_auto> auto_;  // --graceful-exit=auto
  std::unique_ptr<node_state_file> state_;
  std::unique_ptr<node_role> role_;        // with state_: whether this supervisor publishes it
  std::unique_ptr<task_metrics> metrics_;  // --metrics-dir
  int sigfd_ = -1;
  int loop_fd_ = -1;  // epoll: sigfd_, health_.death_fd(), the publisher's pidfd
  job_query query_;   // the EndTime query in flight, if any
  std::string query_why_;
  std::optional<clock::time_point> notice_by_;  // a notice waits for the query's answer until then
  bool preempted_ = false;
  bool term_seen_ = false;        // a TERM came: the batch end asks whether it was a preemption
  std::uint32_t seen_flags_ = 0;  // node flags already relayed (followers)
  bool job_ending_ = false;       // the controller says the job is no longer RUNNING
  bool state_removed_said_ = false;
};

}  // namespace trainctl
