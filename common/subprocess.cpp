#include "subprocess.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

#include "owned_fd.hpp"
#include "parse.hpp"

namespace trainctl {
namespace {

using clock = std::chrono::steady_clock;

// SIGPIPE blocked for this thread while it writes to the child; one that a write
// raised is taken back before the mask is restored.
class sigpipe_blocked {
 public:
  sigpipe_blocked() {
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    sigpending(&pending_before_);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old_);
  }
  ~sigpipe_blocked() {
    if (!sigismember(&pending_before_, SIGPIPE)) {
      sigset_t pipe_only;
      sigemptyset(&pipe_only);
      sigaddset(&pipe_only, SIGPIPE);
      const timespec zero{0, 0};
      while (sigtimedwait(&pipe_only, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  sigpipe_blocked(const sigpipe_blocked&) = delete;
  sigpipe_blocked& operator=(const sigpipe_blocked&) = delete;

 private:
  sigset_t old_{}, pending_before_{};
};

std::string describe(const child_spec& s) {
  if (s.argv.empty()) return "the check's child process";
  std::string what;
  for (const auto& a : s.argv) what += (what.empty() ? "" : " ") + a;
  return what.size() > 120 ? what.substr(0, 117) + "..." : what;
}

// close_from(first): closes every fd >= first, in a child between fork and exec (no
// allocation). Through the system call, not glibc's close_range(), which only glibc 2.34
// has (the wheel's files are built against 2.31); on a kernel before 5.9, by the list of
// /proc/self/fd read with getdents64 into the stack.
void close_from(int first) {
#ifdef SYS_close_range
  if (syscall(SYS_close_range, first, ~0U, 0) == 0) return;
#endif
  // procfs, which no user writes; O_NOFOLLOW all the same (the project's rule for opens).
  const int dir = open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dir < 0) {
    for (int fd = first; fd < 65536; ++fd) close(fd);
    return;
  }
  alignas(8) char buf[4096];
  for (;;) {
    const long n = syscall(SYS_getdents64, dir, buf, sizeof buf);
    if (n <= 0) break;
    for (long off = 0; off < n;) {
      const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
      off += d->d_reclen;
      int fd = 0;
      const char* c = d->d_name;
      if (*c < '0' || *c > '9') continue;
      for (; *c >= '0' && *c <= '9'; ++c) fd = fd * 10 + (*c - '0');
      // Closing while reading is safe: the kernel's listing goes by fd number.
      if (fd >= first && fd != dir) close(fd);
    }
  }
  close(dir);
}

[[noreturn]] void become_child(const child_spec& s, int in_fd, int out_fd, pid_t parent) {
  setpgid(0, 0);  // one group: a shell's children are killed with it
  if (s.parent_death_signal != 0) {
    prctl(PR_SET_PDEATHSIG, s.parent_death_signal);
    if (getppid() != parent) _exit(127);  // the caller died before the line above
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGPIPE, SIG_DFL);
  for (int sig : s.ignore_signals) signal(sig, SIG_IGN);
  const int devnull = open("/dev/null", O_RDWR);
  dup2(in_fd >= 0 ? in_fd : devnull, STDIN_FILENO);
  dup2(out_fd, STDOUT_FILENO);
  dup2(s.merge_stderr ? out_fd : devnull, STDERR_FILENO);
  // Nothing else of the caller's stays open: not its stdout (a shell reading
  // `$(trainwatch ...)` would wait for an abandoned child forever), no lock, no socket.
  close_from(3);
  if (s.argv.empty()) {
    const std::string out = s.work ? s.work() : std::string();
    for (size_t done = 0; done < out.size();) {
      const ssize_t n = write(STDOUT_FILENO, out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    _exit(0);
  }
  std::vector<char*> argv;
  argv.reserve(s.argv.size() + 1);
  for (const auto& a : s.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  _exit(127);
}

void describe_failure(const child_spec& spec, child_result& r) {
  const std::string what = describe(spec);
  if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 127 && !spec.argv.empty())
    r.error = what + ": cannot run it (not found, exit 127)";
  else if (!r.ok())
    r.error = what + ": failed (" +
              (WIFEXITED(r.status) ? "exit " + std::to_string(WEXITSTATUS(r.status))
                                   : "killed by SIG" + signal_name(WTERMSIG(r.status))) +
              ")";
}

}  // namespace

bool child_result::ok() const { return finished && WIFEXITED(status) && WEXITSTATUS(status) == 0; }

child_result run_child(const child_spec& spec) {
  child_result r;
  const std::string what = describe(spec);
  int in[2] = {-1, -1}, out[2];
  if (pipe2(out, O_CLOEXEC) != 0 || (!spec.input.empty() && pipe2(in, O_CLOEXEC) != 0)) {
    r.error = what + ": pipe: " + std::strerror(errno);
    return r;
  }
  owned_fd out_r(out[0]), in_w(in[1]);  // the parent's ends
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) become_child(spec, in[0], out[1], parent);
  close(out[1]);  // the child's ends
  if (in[0] >= 0) close(in[0]);
  if (pid < 0) {
    r.error = what + ": fork: " + std::strerror(errno);
    return r;
  }
  // Readable when the child exits; without pidfds (before Linux 5.3) the loop looks
  // with waitpid every 50 ms instead.
  const owned_fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  fcntl(out_r.get(), F_SETFL, O_NONBLOCK);
  if (in_w) fcntl(in_w.get(), F_SETFL, O_NONBLOCK);
  const auto end = clock::now() + spec.deadline;
  size_t written = 0;
  bool exited = false;
  sigpipe_blocked no_sigpipe;
  auto drain = [&] {  // what the child wrote so far; false at end of file
    char buf[4096];
    ssize_t got;
    while ((got = read(out_r.get(), buf, sizeof buf)) > 0)
      if (r.output.size() < spec.max_output)
        r.output.append(buf, std::min(static_cast<size_t>(got), spec.max_output - r.output.size()));
    return got != 0;
  };
  bool open_out = true;
  while (!exited) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - clock::now()).count();
    if (left <= 0) break;
    pollfd fds[3];
    nfds_t n = 0;
    if (open_out) fds[n++] = {out_r.get(), POLLIN, 0};
    if (in_w) fds[n++] = {in_w.get(), POLLOUT, 0};
    if (pidfd) fds[n++] = {pidfd.get(), POLLIN, 0};
    const long wait = pidfd ? left : std::min<long>(left, 50);
    if (poll(fds, n, static_cast<int>(wait)) < 0 && errno != EINTR) break;
    if (open_out) open_out = drain();
    if (in_w) {
      const ssize_t put = write(in_w.get(), spec.input.data() + written, spec.input.size() - written);
      if (put > 0) written += static_cast<size_t>(put);
      // Done, or the child closed its end without reading it all (EPIPE): either way
      // its stdin ends here, and its exit status says whether that was all right.
      if (written == spec.input.size() || (put < 0 && errno != EAGAIN && errno != EINTR)) in_w.reset();
    }
    if (waitpid(pid, &r.status, WNOHANG) == pid) {
      exited = true;
      // What it wrote before exiting is in the pipe; a grandchild that keeps the pipe
      // open is not waited for.
      if (open_out) drain();
    }
  }
  if (!exited) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, WNOHANG);  // reaped if it died at once; else left to the kernel
    r.error = what + ": no answer within " + format_duration(spec.deadline) + "; killed it";
    return r;
  }
  r.finished = true;
  describe_failure(spec, r);
  return r;
}

started_child::started_child(const child_spec& spec) : spec_(spec) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    error_ = describe(spec) + ": pipe: " + std::strerror(errno);
    return;
  }
  const pid_t parent = getpid();
  pid_ = fork();
  if (pid_ == 0) become_child(spec_, -1, out[1], parent);
  const int fork_errno = errno;
  close(out[1]);  // the child's end
  out_fd_.reset(out[0]);
  if (pid_ < 0) error_ = describe(spec) + ": fork: " + std::strerror(fork_errno);
  fcntl(out_fd_.get(), F_SETFL, O_NONBLOCK);
}

started_child::~started_child() = default;

void started_child::drain() {
  char buf[4096];
  ssize_t got;
  while (out_fd_ && (got = read(out_fd_.get(), buf, sizeof buf)) > 0)
    if (output_.size() < spec_.max_output)
      output_.append(buf, std::min(static_cast<size_t>(got), spec_.max_output - output_.size()));
}

child_result started_child::finish(int wait_status) {
  drain();
  child_result r;
  r.finished = true;
  r.status = wait_status;
  r.output = std::move(output_);
  describe_failure(spec_, r);
  return r;
}

bool started_child::wait_exit(std::chrono::milliseconds bound, int* status) {
  *status = 0;
  const auto until = std::chrono::steady_clock::now() + bound;
  for (;;) {
    if (pid_ <= 0 || waitpid(pid_, status, WNOHANG) == pid_) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

child_result started_child::abandon() {
  if (pid_ > 0) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
  }
  child_result r;
  r.error = describe(spec_) + ": no answer within " + format_duration(spec_.deadline) + "; killed it";
  return r;
}

}  // namespace trainctl
