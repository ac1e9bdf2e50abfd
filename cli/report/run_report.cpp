#include "run_report.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "checkpoint_advice.hpp"
#include "first_death.hpp"
#include "interruptions.hpp"
#include "parse.hpp"
#include "save_writes.hpp"
#include "slurm_job.hpp"

namespace trainctl {

std::string report_span(double s) {
  char out[32];
  if (s < 0) s = 0;
  if (s < 60)
    std::snprintf(out, sizeof out, "%.1fs", s);
  else if (s < 3600)
    std::snprintf(out, sizeof out, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else
    std::snprintf(out, sizeof out, "%dh%02dm", static_cast<int>(s) / 3600, static_cast<int>(s) / 60 % 60);
  return out;
}

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

// Walks the task's events (in time order) into saves, marks and the breakdown.
void account(task_report& t, const std::vector<run_event>& events) {
  const std::int64_t start = t.task.start_ms, end = t.task.end_ms;
  std::int64_t& hang_from = t.hang_from_ms;  // when the ranks stalled, from a hang notice
  std::vector<const run_event*> deaths;      // each node's first rank death of its own
  double restore_s = 0;                      // the loop's restore before its first step
  // SLURM keeps whole seconds: the task really ended up to 999 ms after its EndTime, and
  // a rank's last events (its end, a crash's last check()) can lie there.
  const std::int64_t last_ms = end + 999;
  auto clamp = [&](std::int64_t ms) { return std::min(std::max(ms, start), last_ms); };
  for (const run_event& e : events) {
    t.has_events = true;
    if (note_write_event(t, e, clamp(e.ms))) continue;
    if (e.what == "first_step" && t.first_step_ms == 0) {
      t.first_step_ms = clamp(e.ms);
      t.first_step = e.step;
      t.untrusted_saves = std::max<std::int64_t>(0, e.figure("untrusted", 0));
    } else if (e.what == "save" || e.what == "exit") {
      save_span s;
      s.begin_ms = clamp(e.ms);
      s.step = e.step;
      s.reason = e.reason;
      s.exit = e.what == "exit";
      if (s.exit) {
        t.exit_reason = e.reason;
        t.exit_step = e.step;
      }
      t.saves.push_back(s);
    } else if (e.what == "saved" && !t.saves.empty() && t.saves.back().end_ms == 0) {
      t.saves.back().end_ms = clamp(e.ms);
      t.saves.back().blocking_ms = std::max<std::int64_t>(0, t.saves.back().end_ms - t.saves.back().begin_ms);
    } else if (e.what == "restore" && t.first_step_ms == 0 && e.took_ms >= 0) {
      restore_s += static_cast<double>(e.took_ms) / 1000.0;
    } else if (e.what == "end") {
      t.end_event_ms = clamp(e.ms);
      t.last_step = e.step;
      if (e.took_ms >= 0) t.last_agreement_ms = clamp(e.ms - e.took_ms);
    } else if (e.what == "uncommitted") {
      for (auto s = t.saves.rbegin(); s != t.saves.rend(); ++s)
        if (s->step == e.step) {
          s->uncommitted.push_back(e.figure("rank"));
          break;
        }
    } else if (e.what == "death") {
      deaths.push_back(&e);
    } else if (e.what == "held") {
      t.held_tasks = std::max<std::int64_t>(0, e.figure("tasks", 0));
    } else if (e.what == "notice") {
      // One mark per notice: each node's supervisor notes the hang it found.
      const bool again = std::any_of(t.notices.begin(), t.notices.end(), [&](const auto& n) {
        return n.second == e.reason && std::llabs(n.first - clamp(e.ms)) < 5000;
      });
      if (!again) t.notices.emplace_back(clamp(e.ms), e.reason);
      if (e.reason == "hang" && e.took_ms >= 0 && hang_from == 0) hang_from = clamp(e.ms - e.took_ms);
    }
  }
  first_death_of(t, deaths);
  // A save a rank did not commit is no save to resume from: its time and the training
  // before it are lost, and the steps kept are the last committed save's.
  settle_writes(t);
  t.kept_step = -1;
  for (save_span& s : t.saves) {
    if (!s.uncommitted.empty()) s.end_ms = 0;
    if (s.end_ms != 0) t.kept_step = s.step;
  }
  t.loop_finished = t.exit_reason.empty() && t.end_event_ms != 0 && t.task.state == "COMPLETED";
  const std::int64_t last = t.last_step >= 0 ? t.last_step : t.exit_step;
  t.straggler = price_stragglers(events, t.first_step >= 0 && last >= t.first_step ? last - t.first_step : -1);
  t.slow = find_slow_steps(events);
  const double total_s = static_cast<double>(end - start) / 1000.0;
  // Time within the task's own wall time, or the line was damaged: said, never summed.
  if (t.slow.excess_s > total_s) {
    t.damaged.push_back("step_times (" + span_text(t.slow.excess_s) + " of slow steps in a task of " +
                        span_text(total_s) + ")");
    t.slow = slow_steps{};
  }
  if (t.straggler.priced() && t.straggler.wall_s > total_s) {
    t.damaged.push_back("compute (" + span_text(t.straggler.wall_s) + " waiting for a straggler in a task of " +
                        span_text(total_s) + ")");
    t.straggler = straggler_price{};
  }
  // The restore is part of the time to the first step, apart from the rest of start-up.
  auto split_restore = [&] {
    t.restore_s = std::min(restore_s, t.startup_s);
    t.startup_s -= t.restore_s;
  };
  if (t.first_step_ms == 0) {  // no step: the whole task went to start-up (or a failure before it)
    t.startup_s = total_s;
    split_restore();
    return;
  }
  const std::int64_t until = t.end_event_ms != 0 ? t.end_event_ms : end;  // rank 0's end
  t.startup_s = static_cast<double>(t.first_step_ms - start) / 1000.0;
  split_restore();
  t.end_s = static_cast<double>(std::max<std::int64_t>(0, end - until)) / 1000.0;
  std::int64_t kept_until = 0;  // the begin of the last finished save: training before it is kept
  for (const save_span& s : t.saves)
    if (s.end_ms != 0) kept_until = s.begin_ms;
  std::int64_t cursor = t.first_step_ms;
  for (const save_span& s : t.saves) {
    if (s.begin_ms > cursor) {
      const bool kept = s.begin_ms <= kept_until;
      t.training.push_back({cursor, s.begin_ms, kept, false, !kept && t.running});
    }
    const std::int64_t save_end = s.end_ms != 0 ? s.end_ms : until;
    (s.end_ms != 0 ? t.saves_s
     : t.running   ? t.unsaved_s
                   : t.lost_s) += static_cast<double>(std::max<std::int64_t>(0, save_end - s.begin_ms)) / 1000.0;
    cursor = std::max(cursor, save_end);
  }
  // A task that ended COMPLETED, its loop done without an exit trainctl decided, kept
  // its last work: a loop that finishes saves its result (it is told so in the text).
  if (until > cursor) t.training.push_back({cursor, until, t.loop_finished, false, t.running});
  if (hang_from != 0) {
    // Lost training from the stall on was a hang's. With --hang-action=save-exit (exit
    // reason hang) the ranks came back from the stall only to save and exit: the save
    // kept the steps before it, and the stall itself was the hang's too.
    const bool save_exit = t.exit_reason == "hang";
    std::vector<task_report::span> split;
    for (const auto& sp : t.training) {
      const bool hangs = !sp.kept || save_exit;
      if (hangs && sp.from < hang_from && hang_from < sp.to) {
        split.push_back({sp.from, hang_from, sp.kept, false, sp.unsaved});
        split.push_back({hang_from, sp.to, false, true});
      } else {
        const bool hung = hangs && sp.from >= hang_from;
        split.push_back({sp.from, sp.to, sp.kept && !hung, hung, sp.unsaved && !hung});
      }
    }
    t.training.swap(split);
  }
  for (const auto& sp : t.training)
    (sp.kept      ? t.kept_s
     : sp.hung    ? t.hung_s
     : sp.unsaved ? t.unsaved_s
                  : t.lost_s) += static_cast<double>(sp.to - sp.from) / 1000.0;
}

// Without accounting (scontrol alone) a requeued job has one record, its newest run's:
// the runs before it are rebuilt from their task_end events, so that a preempted run's
// steps and save are not lost from the report. With sacct -D each run has its record.
void add_runs_without_records(std::vector<task_record>& tasks, const std::vector<run_event>& events) {
  std::unordered_map<std::string, int> records;
  for (const task_record& t : tasks) ++records[t.job_id];
  std::vector<task_record> earlier;
  for (const task_record& t : tasks) {
    if (records[t.job_id] != 1 || t.start_ms == 0) continue;
    // Its array index, which each task_end names: the ids of an older array (a cluster
    // whose state was reset) may be in the same file.
    const std::size_t underscore = t.name.find('_');
    const std::string index = underscore == std::string::npos ? "" : t.name.substr(underscore + 1);
    const std::int64_t task = all_digits(index, 9) ? std::stoll(index) : -1;
    std::int64_t begun = 0;  // the first event after the last run's task_end
    for (const run_event& e : events) {
      if (e.job != t.job_id || e.ms >= t.start_ms - 1000) continue;
      if (begun == 0) begun = e.ms;
      if (e.what != "task_end") continue;
      if (e.restart < 0 || e.task != task) {
        begun = 0;
        continue;
      }
      task_record run = t;
      run.start_ms = begun / 1000 * 1000;
      run.end_ms = std::max(e.ms, run.start_ms);
      run.state = e.reason == "preempted" ? "REQUEUED" : e.reason == "ok" ? "COMPLETED" : "FAILED";
      run.from_events = true;
      earlier.push_back(run);
      begun = 0;
    }
  }
  tasks.insert(tasks.end(), earlier.begin(), earlier.end());
}

}  // namespace

run_report build_run_report(const std::string& job, std::vector<task_record> tasks,
                            const std::vector<run_event>& events, std::int64_t now_ms) {
  add_runs_without_records(tasks, events);
  std::stable_sort(tasks.begin(), tasks.end(), [](const task_record& a, const task_record& b) {
    if ((a.start_ms == 0) != (b.start_ms == 0)) return b.start_ms == 0;
    return a.start_ms < b.start_ms;
  });
  run_report r;
  r.job = job;
  // By job id: each task's events, and the Start and End of each of its runs (sacct -D).
  std::unordered_map<std::string, std::vector<const run_event*>> events_of;
  for (const run_event& e : events) events_of[e.job].push_back(&e);
  std::unordered_map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> runs_of;
  for (const task_record& t : tasks) runs_of[t.job_id].emplace_back(t.start_ms, t.end_ms);
  // Where a run's events begin: a few seconds before its Start, for the nodes' clocks,
  // but never before the middle of the gap after the same job's run before it (a
  // requeued run can start 4 s after the preempted one ended, whose last events lie there).
  auto events_from = [&runs_of](const std::string& id, std::int64_t start) {
    std::int64_t slack = 5000;
    for (const auto& run : runs_of[id])
      if (run.first < start && run.second != 0 && run.second <= start)
        slack = std::min(slack, (start - run.second) / 2);
    return start - slack;
  };
  std::int64_t busy_until = 0;  // the latest End of the tasks so far
  for (task_record& rec : tasks) {
    task_report t;
    t.task = rec;
    if (rec.start_ms == 0) {
      r.tasks.push_back(std::move(t));
      continue;
    }
    const bool running = rec.end_ms == 0 || rec.state == "RUNNING" || rec.state == "COMPLETING";
    t.running = running;
    if (running) t.task.end_ms = std::max(now_ms, rec.start_ms);
    t.task.end_ms = std::max(t.task.end_ms, t.task.start_ms);
    // Its events: its own job id, from this run (a requeued job keeps its id, and sacct
    // -D gives each run its record): from where this run's begin to where the next
    // run's do, or a minute after this End.
    std::int64_t until = t.task.end_ms + 60000;
    for (const auto& other : runs_of[rec.job_id])
      if (other.first > rec.start_ms) until = std::min(until, events_from(rec.job_id, other.first));
    const std::int64_t from = events_from(rec.job_id, rec.start_ms);
    std::vector<run_event> mine;
    for (const run_event* e : events_of[rec.job_id])
      if (e->ms >= from && e->ms < until) mine.push_back(*e);
    std::stable_sort(mine.begin(), mine.end(), [](const run_event& a, const run_event& b) { return a.ms < b.ms; });
    account(t, mine);
    const std::int64_t ready = std::max({rec.submit_ms, rec.eligible_ms, busy_until});
    t.queue_s = ready > 0 && rec.start_ms > ready ? static_cast<double>(rec.start_ms - ready) / 1000.0 : 0;
    busy_until = std::max(busy_until, t.task.end_ms);
    const double n = std::max(1, rec.nodes);
    r.allocated += n * static_cast<double>(t.task.end_ms - t.task.start_ms) / 1000.0;
    r.productive += n * t.kept_s;
    r.startup += n * t.startup_s;
    r.restore += n * t.restore_s;
    r.saves += n * t.saves_s;
    r.lost += n * t.lost_s;
    r.hung += n * t.hung_s;
    r.unsaved += n * t.unsaved_s;
    r.end += n * t.end_s;
    r.queue_s += t.queue_s;
    if (t.straggler.priced()) {
      r.straggler += n * t.straggler.wall_s;
      ++r.straggler_tasks;
    }
    if (t.slow.steps > 0) {
      r.slow_steps += n * t.slow.excess_s;
      ++r.slow_step_tasks;
    }
    r.first_ms = r.first_ms == 0 ? t.task.start_ms : std::min(r.first_ms, t.task.start_ms);
    r.last_ms = std::max(r.last_ms, t.task.end_ms);
    r.tasks.push_back(std::move(t));
  }
  note_fresh_starts(r);
  return r;
}

std::string run_report_text(const run_report& r) {
  std::size_t started = 0;
  std::vector<std::string> names;
  for (const auto& t : r.tasks) {
    started += t.task.start_ms != 0;
    if (std::find(names.begin(), names.end(), t.task.name) == names.end()) names.push_back(t.task.name);
  }
  char line[512];
  // A requeued task has a row per run (sacct -D).
  std::string out = "report of job " + r.job + ": " + std::to_string(names.size()) + " task" +
                    (names.size() == 1 ? "" : "s") + ", " + std::to_string(started) +
                    (started == 1 ? " run" : " runs") + " started\n\n";
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
  out += "\n";
  for (const auto& t : r.tasks) {  // each save and notice, for the tasks that have them
    const std::string straggler = straggler_clause(t.straggler, t.task.nodes);
    const std::string slow = slow_steps_clause(t.slow, t.task.nodes);
    const std::string death = first_death_clause(t.first_death);
    if (t.saves.empty() && t.notices.empty() && t.restore_s < 0.05 && straggler.empty() && slow.empty() &&
        t.held_tasks == 0 && t.damaged.empty() && !t.task.from_events && death.empty() && t.fresh_start.empty())
      continue;
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
    out += detail;
  }
  out += interruptions_text(find_interruptions(r));
  const double alloc = r.allocated;
  std::snprintf(line, sizeof line,
                "\nallocated   %.2f node-hours (%s of wall time from the first start to the last end)\n"
                "productive  %.2f node-hours: training kept by a finished save\n"
                "goodput     %.1f%%\n",
                alloc / 3600, span_text(static_cast<double>(r.last_ms - r.first_ms) / 1000.0).c_str(),
                r.productive / 3600, pct(r.productive, alloc));
  out += line;
  std::snprintf(line, sizeof line,
                "the rest    start-up %.1f%%, restore %.1f%%, saves %.1f%%, lost work %.1f%%, hangs %.1f%%, task ends "
                "%.1f%%; and %s queued with no task running (no node held)\n",
                pct(r.startup, alloc), pct(r.restore, alloc), pct(r.saves, alloc), pct(r.lost, alloc),
                pct(r.hung, alloc), pct(r.end, alloc), span_text(r.queue_s).c_str());
  out += line;
  if (r.unsaved > 0) {
    std::snprintf(line, sizeof line, "            and %.1f%% training of the running tasks, not saved yet\n",
                  pct(r.unsaved, alloc));
    out += line;
  }
  out += step_costs_text(r);
  out += checkpoint_advice_text(advise_checkpoints(r));
  return out;
}

std::string run_report_json(const run_report& r) {
  using nlohmann::json;
  json j;
  j["schema"] = 1;
  j["job"] = r.job;
  j["allocated_node_s"] = r.allocated;
  j["productive_node_s"] = r.productive;
  j["goodput"] = r.goodput();
  j["startup_node_s"] = r.startup;
  j["restore_node_s"] = r.restore;
  j["saves_node_s"] = r.saves;
  j["lost_node_s"] = r.lost;
  j["hung_node_s"] = r.hung;
  j["unsaved_node_s"] = r.unsaved;
  j["end_node_s"] = r.end;
  j["queue_s"] = r.queue_s;
  j["straggler_node_s"] = r.straggler_tasks > 0 ? json(r.straggler) : json(nullptr);
  j["slow_steps_node_s"] = r.slow_step_tasks > 0 ? json(r.slow_steps) : json(nullptr);
  const checkpoint_advice a = advise_checkpoints(r);
  j["checkpoints"] = {{"saves", a.saves},
                      {"save_s", a.save_s},
                      {"interruptions", a.interruptions},
                      {"training_s", a.training_s},
                      {"mtbi_s", a.interruptions > 0 ? json(a.mtbi_s()) : json(nullptr)},
                      {"between_s", a.between_s > 0 ? json(a.between_s) : json(nullptr)},
                      {"advised_s", a.advised_s > 0 ? json(a.advised_s) : json(nullptr)},
                      {"too_little", a.too_little.empty() ? json(nullptr) : json(a.too_little)}};
  const interruption_costs ic = find_interruptions(r);
  j["interruptions"] = json::array();
  for (const interruption& x : ic.each)
    j["interruptions"].push_back({{"task", x.run->task.name},
                                  {"job_id", x.run->task.job_id},
                                  {"cause", x.cause},
                                  {"detect_s", x.detect_s >= 0 ? json(x.detect_s) : json(nullptr)},
                                  {"teardown_s", x.teardown_s},
                                  {"resumed_by", x.resumed != nullptr ? json(x.resumed->task.name) : json(nullptr)},
                                  {"queue_s", x.resumed != nullptr ? json(x.queue_s) : json(nullptr)},
                                  {"startup_s", x.resumed != nullptr ? json(x.startup_s) : json(nullptr)},
                                  {"restore_s", x.resumed != nullptr ? json(x.restore_s) : json(nullptr)},
                                  {"replayed_steps", x.replayed_steps >= 0 ? json(x.replayed_steps) : json(nullptr)},
                                  {"replayed_s", x.replayed_s}});
  j["interruption_causes"] = ic.causes;
  j["tasks"] = json::array();
  for (const auto& t : r.tasks) {
    json jt;
    jt["task"] = t.task.name;
    jt["job_id"] = t.task.job_id;
    jt["state"] = t.task.state;
    jt["from_events"] = t.task.from_events;
    jt["nodes"] = t.task.nodes;
    jt["start"] = t.task.start_ms != 0 ? json(format_slurm_timestamp(t.task.start_ms)) : json(nullptr);
    jt["end"] = t.task.start_ms != 0 && !t.running ? json(format_slurm_timestamp(t.task.end_ms)) : json(nullptr);
    jt["queue_s"] = t.queue_s;
    jt["startup_s"] = t.startup_s;
    jt["restore_s"] = t.restore_s;
    jt["training_kept_s"] = t.kept_s;
    jt["saves_s"] = t.saves_s;
    jt["lost_s"] = t.lost_s;
    jt["hung_s"] = t.hung_s;
    jt["unsaved_s"] = t.unsaved_s;
    jt["end_s"] = t.end_s;
    jt["exit_reason"] = t.exit_reason.empty() ? json(nullptr) : json(t.exit_reason);
    jt["held_tasks"] = t.held_tasks;
    jt["saves"] = json::array();
    for (const auto& s : t.saves)
      jt["saves"].push_back(
          {{"step", s.step},
           {"reason", s.reason},
           {"exit", s.exit},
           {"took_s", s.end_ms != 0 ? json(save_seconds(s)) : json(nullptr)},  // to its commit, when said
           {"blocking_s", s.blocking_ms > 0 ? json(static_cast<double>(s.blocking_ms) / 1000.0) : json(nullptr)},
           {"write_cut", s.cut.empty() ? json(nullptr) : json(s.cut)},
           {"write_failed", s.failed.empty() ? json(nullptr) : json(s.failed)},
           {"uncommitted_ranks", s.uncommitted}});
    jt["fresh_start"] = t.fresh_start.empty() ? json(nullptr) : json(t.fresh_start);
    jt["notices"] = json::array();
    for (const auto& n : t.notices)
      jt["notices"].push_back({{"kind", n.second}, {"at_s", static_cast<double>(n.first - t.task.start_ms) / 1000.0}});
    const straggler_price& p = t.straggler;
    jt["straggler"] = !p.priced() ? json(nullptr)
                                  : json{{"ranks", p.ranks},
                                         {"steps", p.steps},
                                         {"timed_steps", p.timed},
                                         {"slowest_rank", p.slowest_rank},
                                         {"slowest_step_s", p.slowest_s},
                                         {"median_step_s", p.median_s},
                                         {"compute_marked", p.marked},
                                         {"node_s", p.wall_s * std::max(1, t.task.nodes)}};
    const slow_steps& sl = t.slow;
    jt["slow_steps"] = sl.steps == 0
                           ? json(nullptr)
                           : json{{"steps", sl.steps},       {"median_step_s", sl.median_s},
                                  {"mad_s", sl.mad_s},       {"threshold_s", sl.threshold_s()},
                                  {"outliers", sl.outliers}, {"node_s", sl.excess_s * std::max(1, t.task.nodes)}};
    const task_report::death& d = t.first_death;
    const bool lost = d.lost_peer.rank >= 0 || !d.lost_peer.node.empty();
    const json lost_peer = !lost ? json(nullptr)
                                 : json{{"rank", d.lost_peer.rank >= 0 ? json(d.lost_peer.rank) : json(nullptr)},
                                        {"node", d.lost_peer.node},
                                        {"s_before", d.lost_peer.before_s}};
    jt["first_death"] = d.ms == 0 ? json(nullptr)
                                  : json{{"rank", d.rank >= 0 ? json(d.rank) : json(nullptr)},
                                         {"node", d.node.empty() ? json(nullptr) : json(d.node)},
                                         {"how", d.how},
                                         {"error", d.error.empty() ? json(nullptr) : json(d.error)},
                                         {"at", format_slurm_timestamp(d.ms)},
                                         {"lead_s", d.lead_s >= 0 ? json(d.lead_s) : json(nullptr)},
                                         {"clock_skew_s", d.skew_s >= 0 ? json(d.skew_s) : json(nullptr)},
                                         {"clock_skew_how", d.skew_how.empty() ? json("default") : json(d.skew_how)},
                                         {"after_closed_connection", lost_peer}};
    jt["damaged"] = t.damaged;
    j["tasks"].push_back(jt);
  }
  return j.dump() + "\n";
}

}  // namespace trainctl
