#include "step_times.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

namespace trainctl {
namespace {

constexpr double kRatio = 1.01;
constexpr int kBuckets = 2400;  // 1.01^2400 us: 6.6 hours

int bucket_of(double us) {
  if (us < 1) return 0;
  return std::min(kBuckets - 1, static_cast<int>(std::log(us) / std::log(kRatio)));
}

// A bucket's middle, in us.
double middle_of(int b) { return std::pow(kRatio, b + 0.5); }

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
