#include "sigbus_guard.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "node_state.hpp"

namespace trainctl {
namespace {

// The SIGBUS guard. A mapped file that someone truncates (`> file`, a cleanup of
// /dev/shm) raises SIGBUS at the next read of its pages, in every process that maps
// it: the ranks and their supervisor would die at once, and the death would look like
// a bad node. The handler replaces a faulting node-state mapping with zero pages of
// its own and returns, so the read retries and sees an invalid state (magic 0), which
// the watcher then reports.
// A handler installed later (Python's faulthandler.enable() in a training script) runs
// first; rearm_sigbus_guard, at each watcher wake, puts this one first again with the
// other behind it. Until then the other handler sees the fault first: faulthandler
// prints its traceback and raises SIGBUS again, which reaches this handler without the
// fault's address: a node state whose file is now shorter than its mapping is made
// zero pages then, so the retried read passes as well.
// A fault anywhere else goes to the handler that was there before, as if this one had
// never been installed: its disposition is put back and the access retried. A SIGBUS
// sent to the process (kill, raise) has its default action (a raise by a handler behind
// this one could otherwise come back to that handler for ever), unless it was ignored.
// Runs in a signal handler, any thread: only atomics and async-signal-safe calls.
constexpr int kGuardSlots = 32;
std::atomic<void*> g_guard_start[kGuardSlots];
std::atomic<int> g_guard_fd[kGuardSlots];  // the mapped file's descriptor + 1 (0: none yet)
std::atomic<int> g_guard_faults[kGuardSlots];
struct sigaction g_previous_bus {};
std::mutex g_guard_mu;  // installs and re-arms; never taken in the handler
bool g_guard_installed = false;

// The slot stays claimed (its owner's damage() reads the count, its destructor frees it).
bool remap_slot(int i, void* start) {
  void* again = mmap(start, sizeof(node_state), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (again == MAP_FAILED) return false;
  g_guard_faults[i].fetch_add(1, std::memory_order_release);
  return true;
}

void on_sigbus(int /*sig*/, siginfo_t* info, void* /*uctx*/) {
  const bool fault = info->si_code > 0;  // raised by the hardware, not sent
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  bool remapped = false;
  for (int i = 0; i < kGuardSlots; ++i) {
    void* start = g_guard_start[i].load(std::memory_order_acquire);
    const auto first = reinterpret_cast<std::uintptr_t>(start);
    if (start == nullptr) continue;
    if (fault) {
      if (addr >= first && addr < first + sizeof(node_state) && remap_slot(i, start)) return;
      continue;
    }
    struct stat st {};
    const int fd = g_guard_fd[i].load(std::memory_order_acquire) - 1;
    if (fd >= 0 && g_guard_faults[i].load(std::memory_order_acquire) == 0 && fstat(fd, &st) == 0 &&
        static_cast<size_t>(st.st_size) < sizeof(node_state))
      remapped = remap_slot(i, start) || remapped;
  }
  if (remapped) return;  // a handler behind this one raised it again: the retry now passes
  if (fault) {
    sigaction(SIGBUS, &g_previous_bus, nullptr);
    return;
  }
  if (g_previous_bus.sa_handler == SIG_IGN && (g_previous_bus.sa_flags & SA_SIGINFO) == 0) return;
  signal(SIGBUS, SIG_DFL);
  raise(SIGBUS);  // blocked in this handler: delivered, with the default action, on return
}

bool guard_is_first() {
  struct sigaction now {};
  sigaction(SIGBUS, nullptr, &now);
  return (now.sa_flags & SA_SIGINFO) != 0 && now.sa_sigaction == on_sigbus;
}

void install_guard() {
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  struct sigaction before {};
  sigaction(SIGBUS, &sa, &before);
  g_previous_bus = before;
}

}  // namespace

int guard_mapping(void* map, int fd) {
  {
    std::lock_guard<std::mutex> lock(g_guard_mu);
    if (!g_guard_installed) {
      install_guard();
      g_guard_installed = true;
    }
  }
  for (int i = 0; i < kGuardSlots; ++i) {
    void* free = nullptr;
    if (g_guard_start[i].compare_exchange_strong(free, map)) {
      g_guard_faults[i].store(0, std::memory_order_release);
      g_guard_fd[i].store(fd + 1, std::memory_order_release);
      return i;
    }
  }
  return -1;  // more than 32 states in one process: unguarded, as before
}

void unguard_mapping(int slot) {
  if (slot < 0) return;
  g_guard_fd[slot].store(0, std::memory_order_release);
  g_guard_start[slot].store(nullptr, std::memory_order_release);
}

bool guard_faulted(int slot) { return slot >= 0 && g_guard_faults[slot].load(std::memory_order_acquire) != 0; }

bool rearm_sigbus_guard() {
  std::lock_guard<std::mutex> lock(g_guard_mu);
  if (!g_guard_installed || guard_is_first()) return false;
  install_guard();  // the handler that took its place runs behind it now
  return true;
}

}  // namespace trainctl
