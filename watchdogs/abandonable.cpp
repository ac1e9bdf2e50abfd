#include "abandonable.hpp"

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace trainctl {

std::optional<std::string> run_abandonable(const std::function<std::string()>& work,
                                           std::chrono::milliseconds deadline) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return std::nullopt;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return std::nullopt;
  }
  if (pid == 0) {
    // A child that never returns must hold nothing of the caller's open: not its
    // stdout (a shell reading `$(trainwatch ...)` would wait for it forever), nor any
    // lock or socket. It keeps only its result pipe, as fd 3.
    const int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
      dup2(devnull, STDOUT_FILENO);
      dup2(devnull, STDERR_FILENO);
    }
    if (dup2(fds[1], 3) != 3) _exit(1);
    close_range(4, ~0u, 0);
    fds[1] = 3;
    const std::string out = work();
    size_t done = 0;
    while (done < out.size()) {
      const ssize_t n = write(fds[1], out.data() + done, out.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  bool complete = false;
  const auto end = std::chrono::steady_clock::now() + deadline;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fds[0], POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    char buf[4096];
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      complete = n == 0;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (!complete) {
    kill(pid, SIGKILL);  // takes effect if and when the call returns
    // Reap it if it is already gone; a child stuck in the kernel stays behind.
    waitpid(pid, nullptr, WNOHANG);
    return std::nullopt;
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return out;
}

}  // namespace trainctl
