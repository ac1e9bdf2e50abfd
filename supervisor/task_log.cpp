#include "task_log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <fstream>

#include "slurm_job.hpp"

namespace trainctl {

task_log::~task_log() {
  if (fd_ > 2) close(fd_);
}

void task_log::line(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (fd_ < 0) fd_ = pick_fd();
  dprintf(fd_, "%s: %s\n", prefix_.c_str(), buf);
}

// stderr, unless nobody reads it: /dev/null, or the step of an MPI daemon (Open MPI's
// orted, PRRTE's prted), whose srun mpirun starts with its output thrown away. Then the
// job's own error file, appended, so that what trainctl did on every node reaches the
// job log.
int task_log::pick_fd() const {
  struct stat st {};
  const bool devnull = fstat(2, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
  std::string cmd;
  const pid_t child = child_();
  if (child > 0) {
    std::ifstream in("/proc/" + std::to_string(child) + "/cmdline");
    std::getline(in, cmd, '\0');
    cmd = cmd.substr(cmd.rfind('/') + 1);
  }
  if ((!devnull && cmd != "orted" && cmd != "prted") || job_id_.empty()) return 2;
  const auto job = scontrol_show("job", job_id_, std::chrono::milliseconds(5000), nullptr);
  for (const char* key : {"StdErr", "StdOut"}) {
    const std::string path = job ? scontrol_field(*job, key) : "";
    if (path.empty() || path[0] != '/') continue;
    const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) return fd;
  }
  return 2;
}

}  // namespace trainctl
