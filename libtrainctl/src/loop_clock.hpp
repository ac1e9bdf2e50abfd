// The clocks the controller reads in a rank: the monotonic one for how long things take
// (a save, a phase, a step's work), the coarse wall clock for the heartbeat, and unix
// milliseconds for the run events. Each is the system's plus one offset that only tests
// move (advance_loop_clock), so that a unit test states "the save took 300 ms" instead
// of sleeping 300 ms. The offset is process-wide and 0 outside tests; reading it is one
// relaxed load.
#pragma once

#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace trainctl {

inline std::atomic<std::int64_t> g_loop_clock_offset_us{0};

inline std::int64_t clock_us(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000 +
         g_loop_clock_offset_us.load(std::memory_order_relaxed);
}
// Step times need the fine clock: a coarse one ticks every 1-4 ms, as long as a short
// step. The heartbeat takes the coarse one (a few ns instead of ~20): hang timeouts
// are minutes.
inline std::int64_t steady_us() { return clock_us(CLOCK_MONOTONIC); }
inline std::int64_t coarse_unix_ms() { return clock_us(CLOCK_REALTIME_COARSE) / 1000; }
inline std::int64_t loop_unix_ms() { return clock_us(CLOCK_REALTIME) / 1000; }

// Tests only: every clock above moves on by `d` at once, as if that time had passed.
inline void advance_loop_clock(std::chrono::microseconds d) {
  g_loop_clock_offset_us.fetch_add(d.count(), std::memory_order_relaxed);
}

}  // namespace trainctl
