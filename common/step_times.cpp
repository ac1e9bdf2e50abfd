#include "step_times.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace trainctl {
namespace {

constexpr double kRatio = 1.01;
constexpr double kSqrtRatio = 1.004987562112089;  // a bucket's middle over its lower bound
constexpr int kBuckets = 2400;                    // 1.01^2400 us: 6.6 hours

// Bucket b holds the times from kRatio^b us up to kRatio^(b+1). The bounds come from a
// table and not from std::log and std::pow: glibc 2.29 gave those new symbol versions,
// and the library must load with Enterprise Linux 8's glibc 2.28 (scripts/package).
const std::vector<double>& lower_bounds() {
  static const std::vector<double> bounds = [] {
    std::vector<double> b(kBuckets);
    double at = 1;
    for (double& x : b) {
      x = at;
      at *= kRatio;
    }
    return b;
  }();
  return bounds;
}

int bucket_of(double us) {
  const std::vector<double>& b = lower_bounds();
  const auto above = std::upper_bound(b.begin(), b.end(), us);
  return above == b.begin() ? 0 : static_cast<int>(above - b.begin()) - 1;
}

// A bucket's middle, in us.
double middle_of(int b) { return lower_bounds()[b] * kSqrtRatio; }

// The middle of the value at which `half` of the (value, weight) pairs, sorted by
// value, lie at or below.
double weighted_median(const std::vector<std::pair<double, std::int64_t>>& sorted, std::int64_t total) {
  std::int64_t seen = 0;
  for (const auto& [value, weight] : sorted) {
    seen += weight;
    if (2 * seen >= total) return value;
  }
  return sorted.empty() ? 0 : sorted.back().first;
}

}  // namespace

step_times::step_times() : counts_(kBuckets, 0) {}

void step_times::add(std::int64_t window_us, std::int64_t steps) {
  if (steps <= 0 || window_us < 0) return;
  counts_[bucket_of(static_cast<double>(window_us) / static_cast<double>(steps))] += steps;
  steps_ += steps;
}

step_time_summary step_times::summary() const {
  step_time_summary s;
  s.steps = steps_;
  if (steps_ == 0) return s;
  std::vector<std::pair<double, std::int64_t>> times;
  for (int b = 0; b < kBuckets; ++b)
    if (counts_[b] > 0) times.emplace_back(middle_of(b), counts_[b]);
  const double median = weighted_median(times, steps_);
  std::vector<std::pair<double, std::int64_t>> deviations;
  deviations.reserve(times.size());
  for (const auto& [t, n] : times) deviations.emplace_back(std::fabs(t - median), n);
  std::sort(deviations.begin(), deviations.end());
  const double mad = weighted_median(deviations, steps_);
  const double threshold = median + std::max(3 * mad, 0.1 * median);
  s.median_us = std::llround(median);
  s.mad_us = std::llround(mad);
  s.threshold_us = std::llround(threshold);
  double excess = 0;
  for (const auto& [t, n] : times) {
    if (t <= threshold) continue;
    s.outlier_steps += n;
    excess += (t - median) * static_cast<double>(n);
  }
  s.excess_us = std::llround(excess);
  return s;
}

}  // namespace trainctl
