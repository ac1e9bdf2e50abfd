// A rank's step timing: its work per step between two agreements (the compute the loop
// marked, or else its time outside the agreement), the straggler judged from what all
// ranks agreed on, and rank 0's step times for `trainctl report`. The steady clock (us)
// is injected, so a test states "this window took 30 ms" instead of sleeping.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>

#include "node_state.hpp"
#include "step_times.hpp"

namespace trainctl {

class step_timing {
 public:
  using steady_clock_us = std::function<std::int64_t()>;
  // No fastest time in a vote: the MAX of the negated fastest is then any rank's.
  static constexpr std::int64_t kNoTime = std::numeric_limits<std::int64_t>::min();

  explicit step_timing(steady_clock_us now_us) : now_us_(std::move(now_us)) {}

  // The loop's marked compute (compute_section), from any thread.
  void compute_begin() noexcept;
  void compute_end() noexcept;

  // At a vote at `step`: this rank's work per step since the window began, as the vote's
  // two elements (the slowest with the rank in its low bits, so that the MAX names it;
  // the negated fastest, so that the MAX is the minimum). False, and nothing written,
  // when the window holds no step yet.
  bool time_window(std::int64_t step, int rank, std::int64_t* slowest, std::int64_t* neg_fastest);

  struct rule {
    double factor = 0;   // slower than the fastest by this factor (0: no straggler judged)
    int agreements = 0;  // in this many agreements in a row
  };
  struct verdict {
    bool report = false;  // a straggler's episode begins: say it
    int straggler = -1;   // the rank found slowest at this agreement (-1: none)
    int strikes = 0;      // in how many agreements in a row
    std::int64_t slowest_us = 0, fastest_us = 0;
  };
  // At an agreement on `slowest` and `neg_fastest` (the reduction of time_window's
  // elements): the straggler and its strikes, the same on every rank. `beat` (this
  // rank's heartbeat slot, may be null) gets its strikes, its step time and, unless the
  // window held a hang's stall, the window's work for the straggler's price. Then the
  // next window begins at `step`.
  verdict judge(std::int64_t step, std::int64_t slowest, std::int64_t neg_fastest, bool stalled, int rank,
                const rule& r, rank_beat* beat);

  // Rank 0: the window that ends at this agreement, as that many steps' time, unless it
  // was busy (a save, a phase the loop marked) or held a hang's stall; `busy_next`: the
  // next window is.
  void count_steps(std::int64_t step, bool busy_next, bool stalled);
  // The current window is no step's time (a phase began in it).
  void mark_busy() { steps_busy_ = true; }
  const step_times& step_counts() const { return step_counts_; }

 private:
  void start_window(std::int64_t step);

  steady_clock_us now_us_;
  // The work window, from the last agreement to the next.
  std::int64_t window_us_ = 0;  // when the last agreement returned (0: none yet)
  std::int64_t window_step_ = 0;
  std::int64_t window_compute_us_ = 0;  // the marked compute's total then
  std::int64_t work_us_ = 0;            // work per step in the window that ended at the last vote
  bool timed_ = false;                  // this rank put its work in the vote that ends the window
  bool marked_ = false;                 // that work was the compute the loop marked
  std::atomic<std::int64_t> compute_open_us_{0};
  std::atomic<std::int64_t> compute_total_us_{0};
  // The straggler found at the last agreements, and the one last reported, until as many
  // agreements in a row as it takes to report one have not found it slow: one even
  // window (a fast rank descheduled on a loaded node) does not end its episode.
  int straggler_ = -1, strikes_ = 0, reported_ = -1, calm_ = 0;
  // Rank 0's windows for the report's step times.
  std::int64_t steps_us_ = 0, steps_step_ = 0;
  bool steps_busy_ = false;
  step_times step_counts_;
};

}  // namespace trainctl
