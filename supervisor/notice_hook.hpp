// The user's --on-notice command: run on the job's first node when a notice arrives
// (deadline, preempted, signal, hang), once per kind of notice per job run, in its own
// process group, time-limited, its output in the job's log. Runs in the supervisor, as
// the user; never blocks the supervisor's loop.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace trainctl {

class notice_hook {
 public:
  using logger = std::function<void(const std::string&)>;
  // `command` runs as /bin/sh -c COMMAND (empty: no hook) with the `shield` signals
  // ignored, as the launcher has them: SLURM sends its notices to every process of the
  // step, and the command must survive the notice it runs for. At its time limit its
  // process group is killed (SIGKILL).
  notice_hook(std::string command, std::chrono::milliseconds limit, std::vector<int> shield, logger log);
  notice_hook(const notice_hook&) = delete;
  notice_hook& operator=(const notice_hook&) = delete;
  ~notice_hook();  // ends a command still running (its whole process group)

  // A notice of `kind` arrived. Starts the command unless this is not the job's first
  // node, one is already running, or this job run already ran it for `kind` (on this
  // node, by any supervisor). deadline_ms / end_ms: unix ms, 0 when unknown.
  // `detail` (one line, may be empty) reaches the command as TRAINCTL_NOTICE_DETAIL.
  void notice(const char* kind, std::int64_t deadline_ms, std::int64_t end_ms, const std::string& detail);
  // Takes a status the supervisor's waitpid(-1) reaped: true when it was the hook's.
  bool reaped(pid_t pid, int status);
  // Ends the command at its time limit; how long until it must be called again.
  std::chrono::milliseconds tick();
  // At the supervisor's exit: lets a running command finish within its time limit.
  void finish();
  // When this run of the job started (StartTime, unix ms), once the controller said:
  // with the job id it names the run, which a job id alone does not (ids start again
  // when a cluster's state is reset).
  void set_run_start(std::int64_t start_ms) { run_start_ms_ = start_ms; }
  bool running() const { return pid_ > 0; }
  // Whether `pid` belongs to the running command (its process group): never a rank.
  bool owns(pid_t pid) const { return pid_ > 0 && getpgid(pid) == pid_; }

 private:
  void end_group(int sig) const;
  std::int64_t run_start_ms_ = 0;
  std::string command_;
  std::chrono::milliseconds limit_;
  std::vector<int> shield_;
  logger log_;
  pid_t pid_ = 0;
  std::string kind_;
  std::string ran_;  // kinds this supervisor already ran the command for, "deadline,..."
  std::chrono::steady_clock::time_point started_{};
  bool killed_ = false;
};

}  // namespace trainctl
