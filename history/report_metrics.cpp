#include "report_metrics.hpp"

#include <functional>
#include <map>
#include <string>

#include "checkpoint_advice.hpp"
#include "interruptions.hpp"

namespace trainctl {
namespace {

// What each metric is computed from, once per report.
struct report_figures {
  const run_report& r;
  checkpoint_advice advice;
  interruption_costs interruptions;
};

using labelled = std::vector<std::pair<std::string, double>>;  // a label's value, the sample's

struct metric_row {
  const char* name;
  metric_type type;
  const char* help;
  const char* label;  // the label that tells the samples apart; nullptr: one sample
  bool running_task;  // the same figure in a report of one running task (running_task_metrics)
  std::function<labelled(const report_figures&)> samples;
};

labelled one(double v) { return {{"", v}}; }

labelled badput(const run_report& r) {
  labelled out;
  for (const badput_cause& c : kBadputCauses) out.emplace_back(c.key, r.*c.node_s);
  return out;
}

// The metrics, in the order they are written. A row whose function gives no sample is
// left out (a figure the job has no measure of).
const std::vector<metric_row>& metric_rows() {
  using t = metric_type;
  static const std::vector<metric_row> rows = {
      {"trainctl_allocated_node_seconds_total", t::counter, "Node-seconds the job's tasks held their nodes.", nullptr,
       true, [](const report_figures& f) { return one(f.r.allocated); }},
      {"trainctl_productive_node_seconds_total", t::counter,
       "Node-seconds of training kept: saved, or in a task that ended cleanly.", nullptr, true,
       [](const report_figures& f) { return one(f.r.productive); }},
      {"trainctl_goodput_ratio", t::gauge, "Productive over allocated node-seconds (0 to 1).", nullptr, true,
       [](const report_figures& f) { return one(f.r.goodput()); }},
      {"trainctl_badput_node_seconds_total", t::counter,
       "Node-seconds allocated and not kept as training, by cause: startup (to the first step), restore (loading a "
       "checkpoint), saves (blocking the loop), lost (training not saved when a run ended), hung (after a hang "
       "began), end (from the last check to the task's end).",
       "cause", true, [](const report_figures& f) { return badput(f.r); }},
      {"trainctl_unsaved_node_seconds", t::gauge,
       "Node-seconds of training in running tasks since their last save: neither kept nor lost yet.", nullptr, true,
       [](const report_figures& f) { return one(f.r.unsaved); }},
      {"trainctl_queue_seconds_total", t::counter, "Seconds the job had no task running, submitted or eligible.",
       nullptr, false, [](const report_figures& f) { return one(f.r.queue_s); }},
      {"trainctl_straggler_node_seconds_total", t::counter,
       "Node-seconds of training spent waiting for the slowest rank, where measured.", nullptr, false,
       [](const report_figures& f) { return f.r.straggler_tasks > 0 ? one(f.r.straggler) : labelled{}; }},
      {"trainctl_slow_steps_node_seconds_total", t::counter,
       "Node-seconds of rank 0's steps beyond the median step plus 3 MAD, where measured.", nullptr, false,
       [](const report_figures& f) { return f.r.slow_step_tasks > 0 ? one(f.r.slow_steps) : labelled{}; }},
      {"trainctl_saves_total", t::counter, "Saves measured to their end, the exit saves too.", nullptr, true,
       [](const report_figures& f) { return one(f.advice.saves); }},
      {"trainctl_save_seconds", t::gauge, "The median save's wall seconds, from its decision to its commit.", nullptr,
       true, [](const report_figures& f) { return f.advice.saves > 0 ? one(f.advice.save_s) : labelled{}; }},
      {"trainctl_notices_total", t::counter,
       "Notices the runs had, by kind: hang (a supervisor found the ranks stalled), deadline, preempted, signal, "
       "memory.",
       "kind", true,
       [](const report_figures& f) {
         std::map<std::string, double> by_kind;
         for (const task_report& t : f.r.tasks)
           for (const auto& n : t.notices) by_kind[n.second] += 1;
         return labelled(by_kind.begin(), by_kind.end());
       }},
      {"trainctl_interruptions_total", t::counter,
       "Runs that ended before the training did and were resumed or could be, by cause.", "cause", false,
       [](const report_figures& f) {
         labelled out;
         for (const auto& [cause, n] : f.interruptions.causes) out.emplace_back(cause, n);
         return out;
       }},
      {"trainctl_replayed_steps_total", t::counter,
       "Steps trained again after the interruptions, over those whose steps are known.", nullptr, false,
       [](const report_figures& f) { return one(static_cast<double>(f.interruptions.replayed_steps)); }},
      {"trainctl_task_runs_total", t::counter, "Runs of the job's tasks (a requeue is another run), by SLURM state.",
       "state", false,
       [](const report_figures& f) {
         std::map<std::string, double> by_state;
         for (const task_report& t : f.r.tasks)
           if (t.task.start_ms != 0) by_state[t.running ? std::string("RUNNING") : t.task.state] += 1;
         return labelled(by_state.begin(), by_state.end());
       }},
  };
  return rows;
}

}  // namespace

namespace {

std::vector<metric_family> metrics_of(const run_report& r,
                                      const std::vector<std::pair<std::string, std::string>>& labels,
                                      bool running_task) {
  const report_figures f{r, advise_checkpoints(r), find_interruptions(r)};
  std::vector<metric_family> out;
  for (const metric_row& row : metric_rows()) {
    if (running_task && !row.running_task) continue;
    metric_family m;
    m.name = row.name;
    m.type = row.type;
    m.help = row.help;
    for (const auto& [label, value] : row.samples(f)) {
      metric_sample s;
      s.labels = labels;
      if (row.label != nullptr) s.labels.emplace_back(row.label, label);
      s.value = value;
      m.samples.push_back(std::move(s));
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace

std::vector<metric_family> run_report_metrics(const run_report& r) {
  return metrics_of(r, {{"slurm_job", r.job}}, false);
}

std::vector<metric_family> running_task_metrics(const run_report& r,
                                                const std::vector<std::pair<std::string, std::string>>& labels) {
  return metrics_of(r, labels, true);
}

}  // namespace trainctl
