#include <algorithm>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "checkpoint_advice.hpp"
#include "first_death.hpp"
#include "interruptions.hpp"
#include "report_views.hpp"
#include "save_writes.hpp"
#include "slurm_job.hpp"

namespace trainctl {
namespace {

std::string span_text(double s) { return report_span(s); }

double pct(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0; }

// The training's time that went to stragglers and slow steps, over the tasks that
// measured them.
std::string step_costs_text(const run_report& r) {
  std::string out;
  const auto part = [&](const char* name, double node_s, const char* what, int tasks) {
    if (tasks == 0) return;
    char line[320];
    std::snprintf(line, sizeof line, "%-11s %.2f node-hours (%.1f%%) %s, %d of the runs)\n", name, node_s / 3600,
                  pct(node_s, r.allocated), what, tasks);
    out += line;
  };
  part("stragglers", r.straggler, "of the training waited for the slowest rank (the supervisor's", r.straggler_tasks);
  part("slow steps", r.slow_steps, "beyond the median step time in steps over the median + 3 MAD (rank 0's",
       r.slow_step_tasks);
  return out;
}

}  // namespace

namespace {

// The table: a row per task (a requeued task has a row per run, as sacct -D lists them).
std::string task_table(const run_report& r) {
  char line[512];
  std::string out;
  std::snprintf(line, sizeof line, "%-14s %-10s %5s %8s %9s %9s %14s %9s %7s  %s\n", "TASK", "STATE", "NODES", "QUEUE",
                "START-UP", "TRAINING", "SAVES", "LOST", "END", "EXIT");
  out += line;
  for (const auto& t : r.tasks) {
    if (t.task.start_ms == 0) {
      std::snprintf(line, sizeof line, "%-14s %-10s %5d %8s\n", t.task.name.c_str(), t.task.state.c_str(), t.task.nodes,
                    "-");
      out += line;
      continue;
    }
    std::size_t finished = 0;
    for (const auto& s : t.saves) finished += s.end_ms != 0;
    const std::string saves = std::to_string(finished) + " (" + span_text(t.saves_s) + ")";
    std::string exit = !t.has_events           ? "no trainctl events"
                       : t.exit_reason.empty() ? (t.running         ? "running"
                                                  : t.loop_finished ? "finished (its own last save assumed)"
                                                                    : "ended without a notice")
                                               : t.exit_reason + " at step " + std::to_string(t.exit_step);
    std::snprintf(line, sizeof line, "%-14s %-10s %5d %8s %9s %9s %14s %9s %7s  %s\n", t.task.name.c_str(),
                  t.task.state.c_str(), t.task.nodes, span_text(t.queue_s).c_str(),
                  span_text(t.startup_s + t.restore_s).c_str(), span_text(t.kept_s).c_str(), saves.c_str(),
                  span_text(t.lost_s).c_str(), span_text(t.end_s).c_str(), exit.c_str());
    out += line;
  }
  return out;
}

// A task's saves, notices, hang, deaths and stragglers in one line; "" when it has none.
std::string task_details(const task_report& t) {
  const std::string straggler = straggler_clause(t.straggler, t.task.nodes);
  const std::string slow = slow_steps_clause(t.slow, t.task.nodes);
  const std::string death = first_death_clause(t.first_death);
  if (t.saves.empty() && t.notices.empty() && t.restore_s < 0.05 && straggler.empty() && slow.empty() &&
      t.held_tasks == 0 && t.damaged.empty() && !t.task.from_events && death.empty() && t.fresh_start.empty())
    return "";
  std::string detail = "  " + t.task.name + ":";
  if (t.task.from_events)
    detail += " an earlier run, from trainctl's events (no accounting record: it began before its first event);";
  if (t.restore_s >= 0.05) detail += " restore " + span_text(t.restore_s) + " (in its start-up);";
  if (!t.fresh_start.empty()) detail += " " + t.fresh_start + ";";
  for (const auto& s : t.saves) detail += " " + save_clause(s, t.running) + ";";
  for (const auto& n : t.notices)
    detail +=
        " notice " + n.second + " at +" + span_text(static_cast<double>(n.first - t.task.start_ms) / 1000.0) + ";";
  if (t.hung_s > 0)
    detail += " hung " + span_text(t.hung_s) +
              (t.exit_reason == "hang" ? " (from the stall to the save);" : " (from the stall to the end);");
  if (!t.hang.summary.empty()) detail += " the hang: " + t.hang.summary + ";";
  if (t.unsaved_s > 0)
    detail += " " + span_text(t.unsaved_s) + " of training since its last save, not saved yet (running);";
  if (!t.running && (t.kept_s > 0 || t.lost_s > 0)) {
    if (t.kept_step >= 0 && t.last_step > t.kept_step)
      detail += " " + std::to_string(t.last_step - t.kept_step) + " steps after step " + std::to_string(t.kept_step) +
                " never saved;";
    else if (t.kept_step < 0 && t.first_step >= 0 && t.lost_s > 0)
      detail += " no save finished: every step of this task was lost;";
  }
  detail += death + straggler + slow;
  if (t.held_tasks > 0)
    detail += " the kill switch held the array's " + std::to_string(t.held_tasks) +
              " pending tasks (rm the switch and scontrol release them to go on);";
  for (const std::string& d : t.damaged) detail += " damaged event line not counted: " + d + ";";
  detail.back() = '\n';
  return detail;
}

// The totals: allocated and productive node-hours, the goodput and the rest by cause.
std::string totals_text(const run_report& r) {
  char line[512];
  std::string out;
  const double alloc = r.allocated;
  std::snprintf(line, sizeof line,
                "\nallocated   %.2f node-hours (%s of wall time from the first start to the last end)\n"
                "productive  %.2f node-hours: training kept by a finished save\n"
                "goodput     %.1f%%\n",
                alloc / 3600, span_text(static_cast<double>(r.last_ms - r.first_ms) / 1000.0).c_str(),
                r.productive / 3600, pct(r.productive, alloc));
  out += line;
  out += "the rest   ";
  for (const badput_cause& c : kBadputCauses) {
    std::snprintf(line, sizeof line, "%s %s %.1f%%", &c == kBadputCauses ? "" : ",", c.words, pct(r.*c.node_s, alloc));
    out += line;
  }
  out += "; and " + span_text(r.queue_s) + " queued with no task running (no node held)\n";
  if (r.unsaved > 0) {
    std::snprintf(line, sizeof line, "            and %.1f%% training of the running tasks, not saved yet\n",
                  pct(r.unsaved, alloc));
    out += line;
  }
  return out;
}

}  // namespace

std::string run_report_text(const run_report& r) {
  std::size_t started = 0;
  std::vector<std::string> names;
  for (const auto& t : r.tasks) {
    started += t.task.start_ms != 0;
    if (std::find(names.begin(), names.end(), t.task.name) == names.end()) names.push_back(t.task.name);
  }
  // A requeued task has a row per run (sacct -D).
  std::string out = "report of job " + r.job + ": " + std::to_string(names.size()) + " task" +
                    (names.size() == 1 ? "" : "s") + ", " + std::to_string(started) +
                    (started == 1 ? " run" : " runs") + " started\n\n";
  out += task_table(r);
  out += "\n";
  for (const auto& t : r.tasks) out += task_details(t);  // each save and notice, for the tasks that have them
  out += interruptions_text(find_interruptions(r));
  out += totals_text(r);
  out += step_costs_text(r);
  out += checkpoint_advice_text(advise_checkpoints(r));
  return out;
}

namespace {

using nlohmann::json;

json checkpoints_json(const checkpoint_advice& a) {
  return {{"saves", a.saves},
          {"save_s", a.save_s},
          {"interruptions", a.interruptions},
          {"covered_by_snapshots", a.covered},
          {"training_s", a.training_s},
          {"mtbi_s", a.interruptions > 0 ? json(a.mtbi_s()) : json(nullptr)},
          {"between_s", a.between_s > 0 ? json(a.between_s) : json(nullptr)},
          {"advised_s", a.advised_s > 0 ? json(a.advised_s) : json(nullptr)},
          {"too_little", a.too_little.empty() ? json(nullptr) : json(a.too_little)}};
}

json interruption_json(const interruption& x) {
  return {{"task", x.run->task.name},
          {"job_id", x.run->task.job_id},
          {"cause", x.cause},
          {"detect_s", x.detect_s >= 0 ? json(x.detect_s) : json(nullptr)},
          {"teardown_s", x.teardown_s},
          {"resumed_by", x.resumed != nullptr ? json(x.resumed->task.name) : json(nullptr)},
          {"queue_s", x.resumed != nullptr ? json(x.queue_s) : json(nullptr)},
          {"startup_s", x.resumed != nullptr ? json(x.startup_s) : json(nullptr)},
          {"restore_s", x.resumed != nullptr ? json(x.restore_s) : json(nullptr)},
          {"replayed_steps", x.replayed_steps >= 0 ? json(x.replayed_steps) : json(nullptr)},
          {"snapshot_step", x.snapshot_step >= 0 ? json(x.snapshot_step) : json(nullptr)},
          {"replayed_without_snapshot",
           x.replayed_without_snapshot >= 0 ? json(x.replayed_without_snapshot) : json(nullptr)},
          {"replayed_s", x.replayed_s}};
}

json saves_json(const task_report& t) {
  json out = json::array();
  for (const auto& s : t.saves)
    out.push_back(
        {{"step", s.step},
         {"reason", s.reason},
         {"exit", s.exit},
         {"took_s", s.end_ms != 0 ? json(save_seconds(s)) : json(nullptr)},  // to its commit, when said
         {"blocking_s", s.blocking_ms > 0 ? json(static_cast<double>(s.blocking_ms) / 1000.0) : json(nullptr)},
         {"write_cut", s.cut.empty() ? json(nullptr) : json(s.cut)},
         {"write_failed", s.failed.empty() ? json(nullptr) : json(s.failed)},
         {"uncommitted_ranks", s.uncommitted}});
  return out;
}

json straggler_json(const straggler_price& p, int nodes) {
  return !p.priced() ? json(nullptr)
                     : json{{"ranks", p.ranks},
                            {"steps", p.steps},
                            {"timed_steps", p.timed},
                            {"slowest_rank", p.slowest_rank},
                            {"slowest_step_s", p.slowest_s},
                            {"median_step_s", p.median_s},
                            {"compute_marked", p.marked},
                            {"node_s", p.wall_s * std::max(1, nodes)}};
}

json slow_steps_json(const slow_steps& sl, int nodes) {
  return sl.steps == 0 ? json(nullptr) : json{{"steps", sl.steps},       {"median_step_s", sl.median_s},
                                              {"mad_s", sl.mad_s},       {"threshold_s", sl.threshold_s()},
                                              {"outliers", sl.outliers}, {"node_s", sl.excess_s * std::max(1, nodes)}};
}

json first_death_json(const task_report::death& d) {
  const bool lost = d.lost_peer.rank >= 0 || !d.lost_peer.node.empty();
  const json lost_peer = !lost ? json(nullptr)
                               : json{{"rank", d.lost_peer.rank >= 0 ? json(d.lost_peer.rank) : json(nullptr)},
                                      {"node", d.lost_peer.node},
                                      {"s_before", d.lost_peer.before_s}};
  return d.ms == 0 ? json(nullptr)
                   : json{{"rank", d.rank >= 0 ? json(d.rank) : json(nullptr)},
                          {"node", d.node.empty() ? json(nullptr) : json(d.node)},
                          {"how", d.how},
                          {"error", d.error.empty() ? json(nullptr) : json(d.error)},
                          {"at", format_slurm_timestamp(d.ms)},
                          {"lead_s", d.lead_s >= 0 ? json(d.lead_s) : json(nullptr)},
                          {"clock_skew_s", d.skew_s >= 0 ? json(d.skew_s) : json(nullptr)},
                          {"clock_skew_how", d.skew_how.empty() ? json("default") : json(d.skew_how)},
                          {"after_closed_connection", lost_peer}};
}

json task_json(const task_report& t) {
  json jt;
  jt["task"] = t.task.name;
  jt["job_id"] = t.task.job_id;
  jt["state"] = t.task.state;
  jt["from_events"] = t.task.from_events;
  jt["nodes"] = t.task.nodes;
  jt["start"] = t.task.start_ms != 0 ? json(format_slurm_timestamp(t.task.start_ms)) : json(nullptr);
  jt["end"] = t.task.start_ms != 0 && !t.running ? json(format_slurm_timestamp(t.task.end_ms)) : json(nullptr);
  jt["queue_s"] = t.queue_s;
  for (const badput_cause& c : kBadputCauses) jt[std::string(c.key) + "_s"] = t.*c.task_s;
  jt["training_kept_s"] = t.kept_s;
  jt["unsaved_s"] = t.unsaved_s;
  jt["exit_reason"] = t.exit_reason.empty() ? json(nullptr) : json(t.exit_reason);
  jt["held_tasks"] = t.held_tasks;
  jt["saves"] = saves_json(t);
  jt["fresh_start"] = t.fresh_start.empty() ? json(nullptr) : json(t.fresh_start);
  jt["notices"] = json::array();
  for (const auto& n : t.notices)
    jt["notices"].push_back({{"kind", n.second}, {"at_s", static_cast<double>(n.first - t.task.start_ms) / 1000.0}});
  jt["hang_summary"] = t.hang.summary.empty() ? json(nullptr) : json(t.hang.summary);
  jt["straggler"] = straggler_json(t.straggler, t.task.nodes);
  jt["slow_steps"] = slow_steps_json(t.slow, t.task.nodes);
  jt["first_death"] = first_death_json(t.first_death);
  jt["damaged"] = t.damaged;
  return jt;
}

}  // namespace

std::string run_report_json(const run_report& r) {
  json j;
  j["schema"] = 1;
  j["job"] = r.job;
  j["allocated_node_s"] = r.allocated;
  j["productive_node_s"] = r.productive;
  j["goodput"] = r.goodput();
  for (const badput_cause& c : kBadputCauses) j[std::string(c.key) + "_node_s"] = r.*c.node_s;
  j["unsaved_node_s"] = r.unsaved;
  j["queue_s"] = r.queue_s;
  j["straggler_node_s"] = r.straggler_tasks > 0 ? json(r.straggler) : json(nullptr);
  j["slow_steps_node_s"] = r.slow_step_tasks > 0 ? json(r.slow_steps) : json(nullptr);
  j["checkpoints"] = checkpoints_json(advise_checkpoints(r));
  const interruption_costs ic = find_interruptions(r);
  j["interruptions"] = json::array();
  for (const interruption& x : ic.each) j["interruptions"].push_back(interruption_json(x));
  j["interruption_causes"] = ic.causes;
  j["tasks"] = json::array();
  for (const auto& t : r.tasks) j["tasks"].push_back(task_json(t));
  return j.dump() + "\n";
}

}  // namespace trainctl
