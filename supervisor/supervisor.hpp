// The supervisor: the process SLURM signals for one task. It runs the command (a
// launcher such as torchrun, or the rank itself) shielded from the notice signals,
// relays every notice to the rank processes (as a signal and through the node state),
// tracks the deadline EndTime - graceful exit, publishes the switch files, and
// forwards the command's exit status. `trainctl-run` and the SPANK plugin both run it.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "options.hpp"

namespace trainctl {

// What the supervisor does after taking the stacks of a hung step.
enum class hang_action { alert, save_exit, end_step };

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
  std::string on_notice;                            // a shell command for notices; empty: none
  std::chrono::milliseconds hang_timeout{0};        // a rank without an agreement this long is hung; 0: off
  std::chrono::milliseconds hang_start_timeout{0};  // a rank without a first agreement this long after it started
  hang_action on_hang = hang_action::alert;
  std::string log_dir;  // stacks-<job>/ and slow_nodes; empty: $SLURM_SUBMIT_DIR, else .
  std::chrono::milliseconds on_notice_timeout = option::kOnNoticeTimeoutDefault;
};

// Runs `argv` (argv[0] looked up in PATH) under supervision and returns what this
// process should exit with. With `adopt` > 0 the command already runs as that child.
int run_supervised(const supervisor_options& opts, char* const* argv, pid_t adopt = 0);

// Writes every rank's stacks on this node for job `job_id` (found in /proc, not below a
// supervisor) into `out_dir` ("fallback:DIR": the ranks' TRAINCTL_LOG_DIR/stacks-JOB,
// else DIR); prints one "stack rank=R pid=P host=H dir=D frame=F" line per rank on
// stdout. trainctl-run --dump-stacks runs it on each node of the job through srun.
int dump_job_stacks_here(const std::string& job_id, std::string out_dir, const std::string& reason);

// Exits this process the way the command ended: its exit code, or the same signal.
[[noreturn]] void exit_like(int wait_status);

}  // namespace trainctl
