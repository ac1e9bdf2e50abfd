// What one task's supervisor is told to do: the options trainctl-run's command line and
// the SPANK plugin fill in, and the health rules read (hang timeouts, the hang action).
// Plain data on the shared ground, so health/ needs nothing from supervisor/.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "options.hpp"

namespace trainctl {

// What the supervisor does after taking the stacks of a hung step.
enum class hang_action { alert, save_exit, end_step };

// What makes a rank hung, and what follows (--hang-timeout and its kin).
struct hang_options {
  std::chrono::milliseconds timeout{0};  // a training rank quiet this long is hung; 0: off, -1: auto
  std::map<std::string, std::chrono::milliseconds> phase_timeouts;  // a phase's budget, when set
  std::chrono::milliseconds start_timeout{0};  // a rank without a first agreement this long after it started
  hang_action action = hang_action::alert;
};

// --metrics-dir: the task's live figures for node_exporter (supervisor/task_metrics).
struct metrics_options {
  std::string dir;  // node_exporter's textfile directory; empty: none
  std::chrono::milliseconds interval = option::kMetricsIntervalDefault;  // rewritten at most this often
};

struct supervisor_options {
  std::chrono::milliseconds graceful_exit{0};  // 0: no deadline from the job's EndTime
  double deadline = 0;                         // an explicit unix deadline (seconds), 0: none
  std::string kill_switch;                     // empty: none
  std::string save_switch;
  int graceful_signal = option::kGracefulSignalDefault;                    // what ranks receive
  std::vector<int> shield = option::default_shield();                      // ignored by the launcher
  std::vector<int> notices = option::default_notices();                    // signals that are notices
  std::chrono::milliseconds poll_interval = option::kPollIntervalDefault;  // switch files
  std::chrono::milliseconds endtime_poll = option::kEndtimePollDefault;    // controller queries
  std::vector<std::string> launchers{"torchrun", "accelerate", "deepspeed", "mpirun", "mpiexec", "srun"};
  bool batch = false;      // the batch step: ranks only if a rank variable shows them
  std::string job_id;      // SLURM_JOB_ID; empty: no controller queries
  std::string state_path;  // node state; empty: the default for this step and node
  std::string log_prefix = "trainctl-run";
  std::string on_notice;  // a shell command for notices; empty: none
  hang_options hang;
  int no_progress_runs = option::kNoProgressRunsDefault;  // the breaker's threshold; 0: off
  std::string log_dir;  // trainctl-<user>/stacks-<job>/ and slow_nodes; empty: $SLURM_SUBMIT_DIR, else .
  std::chrono::milliseconds on_notice_timeout = option::kOnNoticeTimeoutDefault;
  metrics_options metrics;
};

}  // namespace trainctl
