#include "task_processes.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "node_state.hpp"
#include "parse.hpp"
#include "ranks.hpp"

namespace trainctl {

pid_t task_processes::start(char* const* argv) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    log_.line("cannot start %s: fork: %s", argv[0], std::strerror(errno));
    return -1;
  }
  if (pid == 0) {
    // slurmstepd leaves signals blocked in its children, and the supervisor blocks
    // more for its signalfd: the command starts with none blocked, and with the
    // notice signals ignored so that they cannot kill the launcher (SIG_IGN survives
    // exec; ranks that use trainctl install their own handler).
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : opts_.shield) signal(s, SIG_IGN);
    // Should the supervisor die (the OOM killer, kill -9), the command hears of it as a
    // notice instead of running on outside the step: a rank exits through its normal
    // path; the ranks under a launcher (which ignores the signal) see the supervisor's
    // pidfd (TRAINCTL_SUPERVISOR_PID) instead.
    prctl(PR_SET_PDEATHSIG, opts_.graceful_signal);
    if (getppid() != parent) raise(opts_.graceful_signal);
    execvp(argv[0], argv);
    std::fprintf(stderr, "%s: cannot run %s: %s\n", opts_.log_prefix.c_str(), argv[0], std::strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  child_ = pid;
  return pid;
}

bool task_processes::reaped(pid_t pid, int status) {
  if (pid != child_ || child_ <= 0) return false;
  done_ = true;
  status_ = status;
  return true;
}

void task_processes::signal_ranks(const char* why) const {
  size_t sent = 0;
  for (const auto& rank : find_rank_procs(getpid(), opts_.launchers, !opts_.batch))
    if (!is_helper_(rank.pid)) sent += pid_handle(rank).signal(opts_.graceful_signal);
  log_.line("%s: sent SIG%s to %zu rank process%s", why, signal_name(opts_.graceful_signal).c_str(), sent,
            sent == 1 ? "" : "es");
}

void task_processes::kill_all() const {
  for (const auto& p : descendants(getpid(), {}))
    if (p.ours && !is_helper_(p.pid)) pid_handle(p).signal(SIGKILL);
}

void task_processes::end_leftovers() const {
  // Orphans of the command (workers in their own sessions) were reparented to us, a
  // subreaper: with no child left there is no descendant either, and nothing to read.
  if (waitpid(-1, nullptr, WNOHANG | __WALL) < 0 && errno == ECHILD) return;
  for (int round = 0; round < 2; ++round) {
    std::vector<pid_handle> ours;
    // Not this process's own helpers: the log directory's check, a stacks or evidence
    // child, the hook, a query, abandoned above and maybe not dead yet. Counting them
    // said "left 1 process behind" after a clean `true` in a few runs of a hundred.
    for (const auto& p : descendants(getpid(), {}))
      if (p.ours && !is_helper_(p.pid)) ours.emplace_back(p);
    if (ours.empty()) return;
    if (round == 0)
      log_.line("the command left %zu process%s behind; ending them", ours.size(), ours.size() == 1 ? "" : "es");
    for (const auto& p : ours) p.signal(round == 0 ? SIGTERM : SIGKILL);
    for (int i = 0; i < 50; ++i) {
      int status;
      while (waitpid(-1, &status, WNOHANG) > 0) {
      }
      // A reaped child's pidfd answers ESRCH; a zombie that is not ours to reap still
      // answers, and is waited for like a live one.
      if (std::none_of(ours.begin(), ours.end(), [](const pid_handle& p) { return p.alive(); })) break;
      usleep(100000);
    }
  }
}

void task_processes::told_to_exit(const char* why) {
  if (told_ms_ != 0) return;
  told_ms_ = unix_now_ms();
  told_why_ = why;
}

// Named in one line, once, so that a rank that ignores the exit is not mistaken for a
// slow save, nor the job's end for an extension.
void task_processes::report_lingering(const char* when) {
  if (reported_ || told_ms_ == 0) return;
  reported_ = true;  // one look: a command that outlives its ranks (a launcher) is not one
  std::string names;
  size_t n = 0;
  for (const auto& r : find_rank_procs(getpid(), opts_.launchers, !opts_.batch)) {
    if (is_helper_(r.pid)) continue;
    const int rank = proc_rank(r.pid);
    names += std::string(n++ ? ", " : "") + "rank " + (rank < 0 ? "?" : std::to_string(rank)) + " (pid " +
             std::to_string(r.pid) + (writing_ && writing_(r.pid) ? ", waiting for its save's write" : "") + ")";
  }
  if (n == 0) return;
  log_.line("%zu rank process%s still running %lld s after %s told to exit (%s)%s: %s", n, n == 1 ? "" : "es",
            static_cast<long long>((unix_now_ms() - told_ms_) / 1000), n == 1 ? "it was" : "they were",
            told_why_.c_str(), when, names.c_str());
}

std::chrono::milliseconds task_processes::wait(std::chrono::milliseconds cap) const {
  if (told_ms_ == 0 || reported_) return cap;
  return std::min(cap, std::chrono::milliseconds(told_ms_ + kReportAfterMs - unix_now_ms()));
}

void task_processes::tick() {
  if (told_ms_ != 0 && unix_now_ms() - told_ms_ >= kReportAfterMs) report_lingering("");
}

}  // namespace trainctl
