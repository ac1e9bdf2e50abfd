#include "supervisor.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "task_supervisor.hpp"

namespace trainctl {

int run_supervised(const supervisor_options& opts, char* const* argv, pid_t adopt, int run_id_fd) {
  task_supervisor s(opts);
  return s.run(argv, adopt, run_id_fd);
}

void exit_like(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, nullptr);
    raise(sig);
    _exit(128 + sig);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

}  // namespace trainctl
