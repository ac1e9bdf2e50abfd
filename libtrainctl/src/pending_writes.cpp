#include "pending_writes.hpp"

#include <algorithm>
#include <chrono>

namespace trainctl {

std::uint64_t pending_writes::add(std::int64_t step, const std::string& path, std::int64_t began_us,
                                  std::int64_t handed_us) {
  std::lock_guard<std::mutex> hold(mu_);
  const std::uint64_t id = next_++;
  writes_.push_back(pending_write{id, false, step, path, began_us, handed_us});
  return id;
}

std::optional<pending_write> pending_writes::claim(std::uint64_t id) {
  std::lock_guard<std::mutex> hold(mu_);
  const auto it = std::find_if(writes_.begin(), writes_.end(), [id](const pending_write& w) { return w.id == id; });
  if (it == writes_.end() || it->ending) return std::nullopt;
  it->ending = true;
  return *it;
}

void pending_writes::done(std::uint64_t id) {
  {
    std::lock_guard<std::mutex> hold(mu_);
    writes_.erase(std::remove_if(writes_.begin(), writes_.end(), [id](const pending_write& w) { return w.id == id; }),
                  writes_.end());
  }
  ended_.notify_all();
}

std::vector<pending_write> pending_writes::list() const {
  std::lock_guard<std::mutex> hold(mu_);
  return writes_;  // added in order: the oldest first
}

std::size_t pending_writes::size() const {
  std::lock_guard<std::mutex> hold(mu_);
  return writes_.size();
}

std::vector<pending_write> pending_writes::wait(std::int64_t until_us, const std::function<std::int64_t()>& now_us) {
  std::unique_lock<std::mutex> hold(mu_);
  while (!writes_.empty()) {
    std::int64_t slice_us = 100'000;
    if (until_us > 0) {
      const std::int64_t left = until_us - now_us();
      if (left <= 0) break;
      slice_us = std::min(slice_us, left);
    }
    // A system_clock deadline: libstdc++ waits for a steady one with
    // pthread_cond_clockwait, glibc 2.30, past the 2.28 the wheel promises (EL 8). A jump
    // of the wall clock changes one slice of at most 100 ms; the bound is now_us's.
    ended_.wait_until(hold, std::chrono::system_clock::now() + std::chrono::microseconds(slice_us));
  }
  return writes_;
}

}  // namespace trainctl
