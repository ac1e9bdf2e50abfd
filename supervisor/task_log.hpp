// Where a supervisor's lines go: "PREFIX: line" on stderr, unless nobody reads it there.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

namespace trainctl {

class task_log {
 public:
  // `child`: the command's pid once started (0 before), whose name tells an MPI daemon.
  task_log(std::string prefix, std::string job_id, std::function<pid_t()> child)
      : prefix_(std::move(prefix)), job_id_(std::move(job_id)), child_(std::move(child)) {}
  task_log(const task_log&) = delete;
  task_log& operator=(const task_log&) = delete;
  ~task_log();

  void line(const char* fmt, ...) __attribute__((format(printf, 2, 3)));

 private:
  int pick_fd() const;

  std::string prefix_;
  std::string job_id_;
  std::function<pid_t()> child_;
  int fd_ = -1;  // decided at the first line
};

}  // namespace trainctl
