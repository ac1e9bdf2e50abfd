// How long a step takes, and which steps took far longer than the rest: the rule
// Google's ml-goodput-measurement uses for step-time outliers, a step slower than the
// median + 3 MAD (median absolute deviation). Rank 0's controller counts its agreement
// windows here (a window: the steps between two agreements, each step the window's
// time over its steps); its summary goes in the run events for `trainctl report`.
//
// Memory does not grow with the run: the times are kept in buckets 1 % apart (from
// 1 us to 6.6 h; 19 KB), so the median and the MAD are within 1 % of the exact ones. A floor
// of 10 % of the median under the threshold keeps a loop whose steps all take the same
// time (MAD near 0) from having its every slower-by-a-hair step called an outlier.
#pragma once

#include <cstdint>
#include <vector>

namespace trainctl {

struct step_time_summary {
  std::int64_t steps = 0;          // steps counted
  std::int64_t median_us = 0;      // 0: none counted
  std::int64_t mad_us = 0;         // median absolute deviation
  std::int64_t threshold_us = 0;   // a step slower than this is an outlier
  std::int64_t outlier_steps = 0;  // steps slower than the threshold
  std::int64_t excess_us = 0;      // their time beyond the median, summed
};

class step_times {
 public:
  step_times();
  // `steps` steps that took `window_us` together (each step counts window_us / steps).
  void add(std::int64_t window_us, std::int64_t steps);
  std::int64_t steps() const { return steps_; }
  step_time_summary summary() const;

 private:
  std::vector<std::int64_t> counts_;  // steps per bucket
  std::int64_t steps_ = 0;
};

}  // namespace trainctl
