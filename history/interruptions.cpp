#include "interruptions.hpp"

#include <algorithm>
#include <cstdio>

namespace trainctl {
namespace {

double seconds(std::int64_t ms) { return static_cast<double>(std::max<std::int64_t>(0, ms)) / 1000.0; }

// What a person calls the exit the ranks agreed on (an exit switch by its name).
std::string cause_of_exit(const std::string& reason) {
  static const std::map<std::string, std::string> kNames = {
      {"preempted", "preemption"},     {"deadline", "time limit"},     {"hang", "hang"},
      {"peer-failed", "peer failure"}, {"signal", "signal"},           {"memory", "memory"},
      {"no-progress", "no progress"},  {"kill-switch", "kill switch"},
  };
  const auto it = kNames.find(reason);
  return it != kNames.end() ? it->second : "switch " + reason;
}

// Without an agreed exit: what SLURM says ended the run ("" when it ended well).
std::string cause_of_state(const std::string& state) {
  static const std::map<std::string, std::string> kNames = {
      {"PREEMPTED", "preemption"},        {"REQUEUED", "preemption"}, {"TIMEOUT", "time limit"},
      {"DEADLINE", "time limit"},         {"FAILED", "crash"},        {"NODE_FAIL", "node failure"},
      {"OUT_OF_MEMORY", "out of memory"}, {"CANCELLED", "cancelled"}, {"BOOT_FAIL", "node failure"},
  };
  const auto it = kNames.find(state);
  return it != kNames.end() ? it->second : "";
}

std::int64_t first_notice_ms(const task_report& t, const std::string& kind) {
  for (const auto& n : t.notices)
    if (n.second == kind) return n.first;
  return 0;
}

std::int64_t exit_ms(const task_report& t) {
  for (const auto& s : t.saves)
    if (s.exit) return s.begin_ms;
  return 0;
}

// The run interrupted at `i`, or an empty cause when it was none.
interruption judge(const run_report& r, std::size_t i) {
  const task_report& t = r.tasks[i];
  interruption x;
  x.run = &t;
  if (t.task.start_ms == 0 || t.running || t.loop_finished) return x;
  const std::int64_t hang_ms = first_notice_ms(t, "hang");
  x.cause = !t.exit_reason.empty() ? cause_of_exit(t.exit_reason)
            : hang_ms != 0         ? "hang"  // ended by the supervisor (--hang-action=end-step)
                                   : cause_of_state(t.task.state);
  if (x.cause.empty()) return x;
  for (std::size_t j = i + 1; j < r.tasks.size() && x.resumed == nullptr; ++j)
    if (r.tasks[j].task.start_ms != 0 && r.tasks[j].task.start_ms >= t.task.end_ms - 1000) x.resumed = &r.tasks[j];
  // The decision: a hang's finding, the exit agreed, else the last sign of training. The
  // fault: a hang's stall, the notice that brought the exit, else not dated (the decision).
  const std::int64_t agreed = exit_ms(t), notice = agreed != 0 ? first_notice_ms(t, t.exit_reason) : 0;
  const bool hang = x.cause == "hang" && hang_ms != 0 && t.hang.from_ms != 0;
  const std::int64_t decided = hang                       ? hang_ms
                               : agreed != 0              ? agreed
                               : t.last_agreement_ms != 0 ? t.last_agreement_ms
                               : t.end_event_ms != 0      ? t.end_event_ms
                                                          : t.task.end_ms;
  const std::int64_t fault = hang ? t.hang.from_ms : notice != 0 && notice <= decided ? notice : decided;
  if (hang || notice != 0) x.detect_s = seconds(decided - fault);
  x.teardown_s = seconds(t.task.end_ms - decided);
  if (x.resumed != nullptr) {
    x.queue_s = x.resumed->queue_s;
    x.startup_s = x.resumed->startup_s;
    x.restore_s = x.resumed->restore_s;
  }
  const std::int64_t last = t.last_step >= 0 ? t.last_step : t.exit_step;
  if (last >= 0 && x.resumed != nullptr && x.resumed->first_step >= 0) {
    x.replayed_steps = std::max<std::int64_t>(0, last + 1 - x.resumed->first_step);  // what it trained again
    // Resumed past this run's last committed save, at a snapshot its supervisors wrote:
    // what the save alone would have replayed.
    const std::int64_t kept = t.kept_step >= 0 ? t.kept_step : t.first_step - 1;
    if (t.snapshot_step >= 0 && x.resumed->first_step - 1 > kept && x.resumed->first_step - 1 <= t.snapshot_step) {
      x.snapshot_step = x.resumed->first_step - 1;
      x.replayed_without_snapshot = std::max<std::int64_t>(0, last - kept);
    }
  } else if (last >= 0) {
    const std::int64_t kept = t.kept_step >= 0 ? t.kept_step : t.first_step - 1;
    x.replayed_steps = std::max<std::int64_t>(0, last - kept);  // what a resume would train again
  } else if (t.has_events && t.first_step < 0) {
    x.replayed_steps = 0;  // it never trained
  }
  // The training no finished save kept, up to the fault: what follows is detection and
  // teardown, so that the columns add up without counting a second twice.
  for (const auto& sp : t.training)
    if (!sp.kept) x.replayed_s += seconds(std::min(sp.to, fault) - sp.from);
  return x;
}

}  // namespace

interruption_costs find_interruptions(const run_report& r) {
  interruption_costs c;
  for (std::size_t i = 0; i < r.tasks.size(); ++i) {
    interruption x = judge(r, i);
    if (x.cause.empty()) continue;
    ++c.causes[x.cause];
    if (x.detect_s >= 0) c.detect_s += x.detect_s;
    c.teardown_s += x.teardown_s;
    c.queue_s += x.queue_s;
    c.startup_s += x.startup_s;
    c.restore_s += x.restore_s;
    c.replayed_s += x.replayed_s;
    if (x.replayed_steps > 0) c.replayed_steps += x.replayed_steps;
    c.steps_unknown += x.replayed_steps < 0;
    c.each.push_back(std::move(x));
  }
  return c;
}

std::string interruptions_text(const interruption_costs& c) {
  if (c.each.empty()) return "";
  std::string causes;
  for (const auto& [cause, n] : c.causes) causes += (causes.empty() ? "" : ", ") + cause + " " + std::to_string(n);
  std::string out = "\ninterruptions " + std::to_string(c.each.size()) + " (" + causes +
                    "): each one's cost until the next run trained again\n";
  char line[320];
  std::snprintf(line, sizeof line, "%-14s %-13s %8s %9s %8s %9s %8s  %s\n", "TASK", "CAUSE", "DETECT", "TEARDOWN",
                "QUEUE", "START-UP", "RESTORE", "REPLAYED");
  out += line;
  const auto replayed = [](std::int64_t steps, double s) {
    if (steps < 0) return report_span(s) + ", steps not known";  // rank 0 said no last step
    return std::to_string(steps) + (steps == 1 ? " step (" : " steps (") + report_span(s) + ")";
  };
  for (const interruption& x : c.each) {
    const bool resumed = x.resumed != nullptr;
    std::snprintf(line, sizeof line, "%-14s %-13s %8s %9s %8s %9s %8s  %s%s\n", x.run->task.name.c_str(),
                  x.cause.c_str(), x.detect_s < 0 ? "-" : report_span(x.detect_s).c_str(),
                  report_span(x.teardown_s).c_str(), resumed ? report_span(x.queue_s).c_str() : "-",
                  resumed ? report_span(x.startup_s).c_str() : "-", resumed ? report_span(x.restore_s).c_str() : "-",
                  replayed(x.replayed_steps, x.replayed_s).c_str(), resumed ? "" : ", not resumed");
    out += line;
  }
  std::snprintf(line, sizeof line, "%-14s %-13s %8s %9s %8s %9s %8s  %s\n", "total", "",
                report_span(c.detect_s).c_str(), report_span(c.teardown_s).c_str(), report_span(c.queue_s).c_str(),
                report_span(c.startup_s).c_str(), report_span(c.restore_s).c_str(),
                c.steps_unknown == static_cast<int>(c.each.size())
                    ? replayed(-1, c.replayed_s).c_str()
                    : ((c.steps_unknown > 0 ? "at least " : "") + replayed(c.replayed_steps, c.replayed_s)).c_str());
  out += line;
  for (const interruption& x : c.each)
    if (x.cause == "node failure" && x.run->snapshot_step >= 0 && x.snapshot_step < 0)
      out += x.run->task.name +
             ": a node failed: its ranks' snapshots in memory died with it; the next run resumed from what the other "
             "nodes' snapshots and the saves allowed\n";
    else if (x.snapshot_step >= 0)
      out += x.run->task.name + ": snapshot of step " + std::to_string(x.snapshot_step) +
             " written by the supervisors: " + std::to_string(x.replayed_steps) +
             (x.replayed_steps == 1 ? " step" : " steps") + " replayed instead of " +
             std::to_string(x.replayed_without_snapshot) + "\n";
  return out +
         "(detect: the fault to trainctl's decision; teardown: the decision to the run's end; queue, start-up and "
         "restore: the next run's; replayed: training after the last committed save or snapshot, trained again)\n";
}

}  // namespace trainctl
