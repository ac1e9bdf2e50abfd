#include "step_costs.hpp"
#include "run_event_kinds.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

namespace trainctl {

straggler_price price_stragglers(const std::vector<run_event>& events, std::int64_t trained) {
  straggler_price p;
  // Per rank, its work per step from the line with the most steps timed (a node's
  // supervisor that took the publisher role over writes a second line).
  std::map<std::int64_t, std::pair<std::int64_t, std::int64_t>> work;  // rank -> (steps, us)
  std::int64_t slowest_us = 0;
  bool marked = true;
  for (const run_event& e : events) {
    if (e.what != run_event_kind::kCompute) continue;
    const std::int64_t steps = e.figure("steps", 0), slowest = e.figure("slowest_us", 0);
    if (steps <= 0 || slowest <= 0) continue;
    marked = marked && e.figure("marked", 0) == 1;
    if (steps > p.timed) {
      p.timed = steps;
      slowest_us = slowest;
    }
    for (const auto& [rank, us] : e.works) {
      auto& w = work[rank];
      if (steps > w.first) w = {steps, us};
    }
  }
  if (work.empty()) return p;
  std::vector<std::int64_t> per_step;
  std::int64_t longest = -1;
  for (const auto& [rank, w] : work) {
    per_step.push_back(w.second);
    if (w.second > longest) {
      longest = w.second;
      p.slowest_rank = static_cast<int>(rank);
    }
  }
  std::sort(per_step.begin(), per_step.end());
  const std::size_t n = per_step.size();
  const double median_us = n % 2 == 1 ? static_cast<double>(per_step[n / 2])
                                      : (static_cast<double>(per_step[n / 2 - 1]) + per_step[n / 2]) / 2.0;
  p.ranks = static_cast<int>(n);
  p.steps = std::max(trained, p.timed);
  p.marked = marked;
  p.slowest_s = static_cast<double>(slowest_us) / 1e6;
  p.median_s = median_us / 1e6;
  if (p.priced()) p.wall_s = std::max(0.0, p.slowest_s - p.median_s) * static_cast<double>(p.steps);
  return p;
}

slow_steps find_slow_steps(const std::vector<run_event>& events) {
  slow_steps s;
  for (const run_event& e : events) {
    if (e.what != run_event_kind::kStepTimes || e.figure("steps", 0) <= 0) continue;
    s.steps = e.figure("steps", 0);
    s.outliers = std::max<std::int64_t>(0, e.figure("outliers", 0));
    s.median_s = static_cast<double>(std::max<std::int64_t>(0, e.figure("median_us", 0))) / 1e6;
    s.mad_s = static_cast<double>(std::max<std::int64_t>(0, e.figure("mad_us", 0))) / 1e6;
    s.excess_s = static_cast<double>(std::max<std::int64_t>(0, e.figure("excess_us", 0))) / 1e6;
  }
  return s;
}

std::string straggler_clause(const straggler_price& p, int nodes) {
  if (!p.shows()) return "";
  char out[256];
  std::snprintf(out, sizeof out,
                " straggler: rank %d, %.1f ms per step against the median rank's %.1f ms, cost %s%.1f node-s "
                "over %lld steps%s;",
                p.slowest_rank, p.slowest_s * 1000, p.median_s * 1000, p.marked ? "" : "at least ",
                p.wall_s * std::max(1, nodes), static_cast<long long>(p.steps), p.marked ? "" : " (no compute marked)");
  return out;
}

std::string slow_steps_clause(const slow_steps& s, int nodes) {
  if (s.steps == 0 || s.outliers == 0) return "";
  char out[192];
  std::snprintf(out, sizeof out,
                " %lld slow step%s (over %.1f ms, the median %.1f ms + 3 MAD): %.1f node-s beyond the median;",
                static_cast<long long>(s.outliers), s.outliers == 1 ? "" : "s", s.threshold_s() * 1000,
                s.median_s * 1000, s.excess_s * std::max(1, nodes));
  return out;
}

}  // namespace trainctl
