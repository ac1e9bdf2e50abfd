#include "hang_budget.hpp"

#include <algorithm>
#include <cstdio>

#include "options.hpp"

namespace trainctl {

using std::chrono::milliseconds;

namespace {

std::string seconds_text(std::int64_t ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

// factor x ms, rounded up to whole seconds: a budget reads 1m15s, not 75003ms.
milliseconds times(double factor, std::int64_t ms) {
  const auto exact = static_cast<std::int64_t>(factor * static_cast<double>(ms));
  return milliseconds((exact + 999) / 1000 * 1000);
}

}  // namespace

hang_budget budget_for(const hang_rules& rules, const std::string& name, std::int64_t longest_ms) {
  // Auto's training budget learns from earlier tasks only (the caller passes 0 in the
  // first): an unmarked evaluation late in the first task must not find a budget learnt
  // from its first minutes of steps.
  const bool learn_training = rules.timeout == option::kHangTimeoutAuto;
  const milliseconds floor = learn_training ? kAutoHangFloor : rules.timeout;
  hang_budget b;
  if (name.empty()) {
    if (!learn_training) return {rules.timeout, "--hang-timeout"};
    if (longest_ms <= 0) return {kFirstPhaseBudget, "--hang-timeout=auto, nothing learnt yet in this job array"};
    b.budget = std::max(floor, times(kQuietFactor, longest_ms));
    b.why = "--hang-timeout=auto: 5 x the longest time between agreements in this job array (" +
            seconds_text(longest_ms) + "), at least " + format_duration(floor);
    return b;
  }
  const auto set = rules.set.find(name);
  if (set != rules.set.end()) return {set->second, "--hang-phase-timeout " + name + "=" + format_duration(set->second)};
  const std::string what = name == "save" ? "save" : "'" + name + "' phase";
  if (longest_ms <= 0)
    return {std::max(floor, kFirstPhaseBudget), "no " + what + " has finished yet in this job array"};
  b.budget = std::max(floor, times(kPhaseFactor, longest_ms));
  b.why = "3 x the longest " + what + " in this job array (" + seconds_text(longest_ms) + "), at least " +
          format_duration(floor);
  return b;
}

rank_clocks clocks_of(std::int64_t beat_ms, bool training, std::int64_t phase_ms) {
  rank_clocks c;
  c.agreed = beat_ms > 0;
  c.started = c.agreed || (!training && phase_ms > 0);
  if (c.started) {
    c.hang_clock = std::max(beat_ms, phase_ms);
  } else {
    c.start_clock = phase_ms;
  }
  return c;
}

}  // namespace trainctl
