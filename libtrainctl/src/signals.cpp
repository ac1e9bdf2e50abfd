#include "signals.hpp"

#include <csignal>
#include <mutex>

namespace trainctl {

std::atomic<std::uint64_t> g_signals_seen{0};

namespace {

constexpr int kMaxSig = 65;
struct sigaction g_previous[kMaxSig];
int g_installs[kMaxSig];
std::mutex g_mutex;  // guards install and removal, never taken in the handler

// Runs in signal context, in whichever thread the kernel picked: async-signal-safe only.
void notice_handler(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  if (sig > 0 && sig < kMaxSig) g_signals_seen.fetch_or(1ull << (sig - 1), std::memory_order_relaxed);
  // Chain to a handler a user or framework installed before us. A default action of
  // "terminate" is deliberately not chained: surviving the notice is the point.
  const struct sigaction& prev = g_previous[sig];
  if (prev.sa_flags & SA_SIGINFO) {
    if (prev.sa_sigaction != nullptr) prev.sa_sigaction(sig, info, context);
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN && prev.sa_handler != nullptr) {
    prev.sa_handler(sig);
  }
  errno = saved_errno;
}

}  // namespace

std::vector<int> install_notice_handlers(const std::vector<int>& sigs) {
  std::lock_guard<std::mutex> lock(g_mutex);
  std::vector<int> failed;
  for (int sig : sigs) {
    if (sig <= 0 || sig >= kMaxSig || sig == SIGKILL || sig == SIGSTOP) {
      failed.push_back(sig);
      continue;
    }
    if (g_installs[sig]++ > 0) continue;
    g_signals_seen.fetch_and(~(1ull << (sig - 1)));  // a notice from before is not this run's
    struct sigaction sa {};
    sa.sa_sigaction = notice_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &g_previous[sig]) != 0) {
      --g_installs[sig];
      failed.push_back(sig);
    }
  }
  return failed;
}

void remove_notice_handlers(const std::vector<int>& sigs) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (int sig : sigs) {
    if (sig <= 0 || sig >= kMaxSig || g_installs[sig] == 0) continue;
    if (--g_installs[sig] > 0) continue;
    struct sigaction current {};
    sigaction(sig, nullptr, &current);
    // Someone installed another handler after us: leave theirs (it may chain to us).
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == notice_handler)
      sigaction(sig, &g_previous[sig], nullptr);
  }
}

void ignore_late_notices(const std::vector<int>& sigs) {
  std::lock_guard<std::mutex> lock(g_mutex);
  for (int sig : sigs) {
    if ((sig != SIGUSR1 && sig != SIGUSR2) || g_installs[sig] > 0) continue;  // another controller still listens
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) == 0 && !(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL)
      signal(sig, SIG_IGN);
  }
}

}  // namespace trainctl
