// Whether a rank killed by SIGKILL was ended by the OOM killer (the program's memory: it
// will happen again) or from outside the program (an admin's kill -9, a node health
// check, a tool that ends stray processes: no fault of the program). Read from the
// kernel's count of OOM kills in the supervisor's memory domain (find_oom_counter: the
// cgroup its ranks share, else the node), taken at every turn of the supervisor's loop
// (a few seconds apart) and again at the death: the kernel counts a kill before it
// signals, so a count that rose since the turn before names the OOM killer. With the
// node's count (no memory cgroup), another job's OOM kill on the node in those seconds
// counts too.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>

#include "cgroup_memory.hpp"

namespace trainctl {

class oom_watch {
 public:
  using reader = std::function<std::optional<std::uint64_t>()>;
  // Takes the first count at once: deaths before the first turn compare with it.
  explicit oom_watch(reader read) : read_(std::move(read)) { sample(); }
  // The count now, for the next death to compare with (each turn of the loop).
  void sample() { last_ = read_(); }
  // At a SIGKILL death: 1 when the count rose since the last sample (the OOM killer),
  // 0 when it did not (from outside), -1 when it could not be read.
  int oom_killed() const {
    const std::optional<std::uint64_t> now = read_();
    if (!now || !last_) return -1;
    return *now > *last_ ? 1 : 0;
  }

 private:
  reader read_;
  std::optional<std::uint64_t> last_;
};

// The watch of this process's memory domain.
inline oom_watch this_oom_watch() {
  return oom_watch([counter = find_oom_counter()] { return read_oom_kills(counter); });
}

}  // namespace trainctl
