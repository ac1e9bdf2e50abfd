#include "checkpoint_advice.hpp"

#include "save_writes.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace trainctl {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Whether run `t` lost training it had not saved, and not by a plan.
bool interrupted(const task_report& t) {
  if (t.first_step < 0 || t.running) return false;  // never trained, or not over
  if (t.exit_reason == "no-progress") return false;
  if (t.loop_finished) return false;
  for (const auto& s : t.saves)
    if (s.exit && s.end_ms != 0) return false;  // it saved at its exit: nothing lost
  return true;
}

}  // namespace

double checkpoint_advice::waste(double t) const {
  const double m = mtbi_s();
  return t > 0 && m > 0 ? save_s / t + t / (2 * m) : 0;
}

checkpoint_advice advise_checkpoints(const run_report& r) {
  checkpoint_advice a;
  std::vector<double> costs, gaps;
  double node_runs = 0;
  int runs = 0;
  for (const auto& t : r.tasks) {
    if (t.task.start_ms == 0 || t.first_step_ms == 0) continue;
    ++runs;
    node_runs += std::max(1, t.task.nodes);
    // Training ends at rank 0's last check(): what follows (an exit's save, a crash's
    // teardown) is no time the run was training. Older events say only its end.
    const std::int64_t until = t.last_agreement_ms != 0 ? t.last_agreement_ms
                               : t.end_event_ms != 0    ? t.end_event_ms
                                                        : t.task.end_ms;
    a.training_s += static_cast<double>(std::max<std::int64_t>(0, until - t.first_step_ms)) / 1000.0;
    if (interrupted(t)) ++(t.snapshot_step > t.kept_step ? a.covered : a.interruptions);
    std::int64_t from = t.first_step_ms;  // training since the run began, or the last save ended
    for (const auto& s : t.saves) {
      if (s.end_ms == 0) continue;
      costs.push_back(save_seconds(s));  // to its commit: an asynchronous save's write too
      if (!s.exit) gaps.push_back(static_cast<double>(s.begin_ms - from) / 1000.0);
      from = s.end_ms;
    }
  }
  a.saves = static_cast<int>(costs.size());
  a.save_s = median(costs);
  a.between_s = median(gaps);
  a.nodes = runs > 0 ? node_runs / runs : 1;
  if (a.saves == 0) {
    a.too_little = "no save finished yet: the save cost is not known";
  } else if (a.interruptions < kMinInterruptions) {
    a.too_little = std::to_string(a.interruptions) + " interruption" + (a.interruptions == 1 ? "" : "s") +
                   " that lost work in " + report_span(a.training_s) + " of training; at least " +
                   std::to_string(kMinInterruptions) + " are needed to estimate how often they come";
  } else {
    const double m = a.mtbi_s();
    a.advised_s = a.save_s < m / 2 ? std::sqrt(2 * a.save_s * m) - a.save_s : m;
  }
  return a;
}

std::string checkpoint_advice_text(const checkpoint_advice& a) {
  char line[512];
  std::string out;
  std::snprintf(line, sizeof line,
                "checkpoints save cost %s (median of %d); %d interruption%s that lost work in %s of training%s\n",
                report_span(a.save_s).c_str(), a.saves, a.interruptions, a.interruptions == 1 ? "" : "s",
                report_span(a.training_s).c_str(),
                a.interruptions > 0 ? (" (one per " + report_span(a.mtbi_s()) + ")").c_str() : "");
  out += line;
  if (a.covered > 0)
    out += "            and " + std::to_string(a.covered) + " covered by snapshots the supervisors wrote out (" +
           (a.covered == 1 ? "its" : "their") + " loss is the snapshot interval's, not the save interval's)\n";
  if (!a.too_little.empty()) return out + "            no interval advised: " + a.too_little + "\n";
  const std::string now = a.between_s > 0 ? "every " + report_span(a.between_s) + " now (median between saves)"
                                          : "no periodic save seen (only at exits)";
  std::snprintf(line, sizeof line, "            save every %s (Young/Daly: sqrt(2 x save cost x %s) - save cost); %s\n",
                report_span(a.advised_s).c_str(), report_span(a.mtbi_s()).c_str(), now.c_str());
  out += line;
  if (a.between_s > 0) {
    std::snprintf(line, sizeof line,
                  "            lost per interruption %s (%.2f node-hours) now, %s (%.2f) advised; saves and rework "
                  "%.1f%% of training now, %.1f%% advised\n",
                  report_span(a.between_s / 2).c_str(), a.between_s / 2 * a.nodes / 3600,
                  report_span(a.advised_s / 2).c_str(), a.advised_s / 2 * a.nodes / 3600, 100 * a.waste(a.between_s),
                  100 * a.waste(a.advised_s));
    out += line;
  }
  return out;
}

}  // namespace trainctl
