// The controller's watcher thread and the eventfd that wakes it: started once, stopped
// and joined by stop() or at the end of this object, which also closes the descriptor.
#pragma once

#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <functional>
#include <system_error>
#include <thread>
#include <utility>

#include "owned_fd.hpp"

namespace trainctl {

class watcher_thread {
 public:
  watcher_thread() : fd_(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    if (!fd_) throw std::system_error(errno, std::generic_category(), "trainctl: eventfd");
  }
  ~watcher_thread() { stop(); }
  watcher_thread(const watcher_thread&) = delete;
  watcher_thread& operator=(const watcher_thread&) = delete;

  void start(std::function<void()> loop) { thread_ = std::thread(std::move(loop)); }
  // Asks the loop to end, and waits for it.
  void stop() {
    stop_.store(true, std::memory_order_release);
    wake();
    if (thread_.joinable()) thread_.join();
  }
  bool stopping() const { return stop_.load(std::memory_order_acquire); }
  // Any thread: the loop wakes from its wait on fd().
  void wake() const {
    const std::uint64_t one = 1;
    if (write(fd_.get(), &one, sizeof one) < 0) { /* the watcher wakes on its timeout */
    }
  }
  int fd() const { return fd_.get(); }
  // The loop, after its wait: the wakes so far are taken.
  void drain() const {
    std::uint64_t n;
    while (read(fd_.get(), &n, sizeof n) > 0) {
    }
  }

 private:
  owned_fd fd_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace trainctl
