#include "step_timing.hpp"

#include <algorithm>

#include "beat_fields.hpp"
#include "straggler_fields.hpp"

namespace trainctl {
namespace {

constexpr int kRankBits = 20;  // ranks below 2^20 are named; larger ones are not reported

}  // namespace

void step_timing::compute_begin() noexcept { compute_open_us_.store(now_us_(), std::memory_order_relaxed); }

void step_timing::compute_end() noexcept {
  const std::int64_t began = compute_open_us_.exchange(0, std::memory_order_relaxed);
  if (began > 0) compute_total_us_.fetch_add(now_us_() - began, std::memory_order_release);
}

bool step_timing::time_window(std::int64_t step, int rank, std::int64_t* slowest, std::int64_t* neg_fastest) {
  if (window_us_ == 0 || step <= window_step_) return false;
  // A fast rank's wait for a slow one in the agreement is not counted (in a gradient
  // all_reduce it would be, unless the loop marks its compute).
  const std::int64_t marked = compute_total_us_.load(std::memory_order_acquire) - window_compute_us_;
  const std::int64_t spent = marked > 0 ? marked : now_us_() - window_us_;
  work_us_ = std::max<std::int64_t>(1, spent / (step - window_step_));
  timed_ = true;
  marked_ = marked > 0;
  const std::int64_t capped = std::min<std::int64_t>(work_us_, std::int64_t{1} << 40);
  if (rank < (1 << kRankBits)) *slowest = (capped << kRankBits) | rank;
  *neg_fastest = -capped;
  return true;
}

step_timing::verdict step_timing::judge(std::int64_t step, std::int64_t slowest, std::int64_t neg_fastest, bool stalled,
                                        int rank, const rule& r, rank_beat* beat) {
  verdict v;
  if (r.factor > 0 && neg_fastest != kNoTime && slowest > 0) {
    const std::int64_t slowest_us = slowest >> kRankBits, fastest_us = -neg_fastest;
    const int slowest_rank = static_cast<int>(slowest & ((1 << kRankBits) - 1));
    // Under a millisecond per step apart is noise, whatever the ratio.
    const bool slow =
        fastest_us > 0 && static_cast<double>(slowest_us) >= r.factor * fastest_us && slowest_us - fastest_us >= 1000;
    if (!slow) {
      strikes_ = 0;
      straggler_ = -1;
    } else {
      strikes_ = slowest_rank == straggler_ ? strikes_ + 1 : 1;
      straggler_ = slowest_rank;
    }
    if (beat != nullptr) {
      beat_fields::set_step_times(*beat, work_us_, straggler_ == rank ? strikes_ : 0);
      if (timed_ && step > window_step_ && !stalled)  // the straggler's price
        straggler_fields::add_work(*beat, step - window_step_, work_us_, slowest_us, marked_);
    }
    if (slow && slowest_rank == reported_) {
      calm_ = 0;
    } else if (reported_ >= 0 && ++calm_ >= r.agreements) {
      reported_ = -1;
      calm_ = 0;
    }
    if (strikes_ == r.agreements && straggler_ != reported_) {
      reported_ = straggler_;
      calm_ = 0;
      v.report = true;
    }
    v.straggler = straggler_;
    v.strikes = strikes_;
    v.slowest_us = slowest_us;
    v.fastest_us = fastest_us;
  }
  start_window(step);
  return v;
}

void step_timing::start_window(std::int64_t step) {
  timed_ = false;
  window_us_ = now_us_();
  window_step_ = step;
  window_compute_us_ = compute_total_us_.load(std::memory_order_acquire);
}

void step_timing::count_steps(std::int64_t step, bool busy_next, bool stalled) {
  const std::int64_t now = now_us_();
  if (steps_us_ != 0 && step > steps_step_ && !steps_busy_ && !stalled)
    step_counts_.add(now - steps_us_, step - steps_step_);
  steps_us_ = now;
  steps_step_ = step;
  steps_busy_ = busy_next;
}

}  // namespace trainctl
