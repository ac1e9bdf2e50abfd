// Whether a rank killed by SIGKILL was ended by the OOM killer (the program's memory: it
// will happen again) or from outside the program (an admin's kill -9, a node health
// check, a tool that ends stray processes: no fault of the program). Read from the
// kernel's count of OOM kills in the supervisor's memory domain (find_oom_counter: the
// cgroup its ranks share, else the node), taken at the turns of the supervisor's loop
// (a few seconds apart) and again at the death: the kernel counts a kill before it
// signals, so a count that rose in the 10 s before the death names the OOM killer.
// With the node's count (no memory cgroup), another job's OOM kill on the node in those
// seconds counts too.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "cgroup_memory.hpp"

namespace trainctl {

class oom_watch {
 public:
  using reader = std::function<std::optional<std::uint64_t>()>;
  // How long before a death the count it is compared with must have been taken: the
  // kernel counts the kill as it picks the victim, which then takes a while to exit
  // (freeing gigabytes; 2 s seen on a test VM) and longer to be seen (a turn of the
  // loop, a reap).
  static constexpr std::int64_t kWindowMs = 10000;
  // Takes the first count at once (`now_ms`): deaths before any turn compare with it.
  oom_watch(reader read, std::int64_t now_ms) : read_(std::move(read)) { sample(now_ms); }
  // The count at `now_ms` (each turn of the loop; at most one kept per second).
  void sample(std::int64_t now_ms) {
    if (!samples_.empty() && now_ms - samples_.back().ms < 1000) return;
    const std::optional<std::uint64_t> c = read_();
    if (!c) return;
    if (samples_.size() == kKept) samples_.erase(samples_.begin());
    samples_.push_back({now_ms, *c});
  }
  // At a SIGKILL death seen at `died_ms`: 1 when the count now is above the newest one
  // taken kWindowMs before (the OOM killer), 0 when not (from outside), -1 when it
  // cannot be read or no count came before the death. A death in the run's first
  // seconds compares with the first count.
  int oom_killed(std::int64_t died_ms) const {
    const std::optional<std::uint64_t> now = read_();
    const sample_at* before = nullptr;
    for (const sample_at& s : samples_)
      if (s.ms <= died_ms - kWindowMs || &s == &samples_.front()) before = &s;
    if (!now || before == nullptr || before->ms > died_ms) return -1;
    return *now > before->count ? 1 : 0;
  }

 private:
  struct sample_at {
    std::int64_t ms;
    std::uint64_t count;
  };
  static constexpr std::size_t kKept = 32;  // 32 s at least: the window and then some
  reader read_;
  std::vector<sample_at> samples_;
};

// The watch of this process's memory domain.
inline oom_watch this_oom_watch(std::int64_t now_ms) {
  return oom_watch([counter = find_oom_counter()] { return read_oom_kills(counter); }, now_ms);
}

}  // namespace trainctl
