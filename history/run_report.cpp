#include "run_report.hpp"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "first_death.hpp"
#include "parse.hpp"
#include "run_event_kinds.hpp"
#include "save_writes.hpp"

namespace trainctl {

namespace {

// What the walk over a task's events gathers besides the task's own fields.
struct walked {
  std::vector<const run_event*> deaths;  // each node's first rank death of its own
  double restore_s = 0;                  // the loop's restore before its first step
};

// SLURM keeps whole seconds: the task really ended up to 999 ms after its EndTime, and
// a rank's last events (its end, a crash's last check()) can lie there.
std::int64_t clamp_to_task(const task_report& t, std::int64_t ms) {
  return std::min(std::max(ms, t.task.start_ms), t.task.end_ms + 999);
}

// One mark per notice: each node's supervisor notes the hang it found; the stall's
// begin from the first hang notice that says how long the ranks had been quiet.
void note_notice(task_report& t, const run_event& e) {
  const std::int64_t at = clamp_to_task(t, e.ms);
  const bool again = std::any_of(t.notices.begin(), t.notices.end(), [&](const auto& n) {
    return n.second == e.reason && std::llabs(n.first - at) < 5000;
  });
  if (!again) t.notices.emplace_back(at, e.reason);
  if (e.reason == "hang" && e.took_ms >= 0 && t.hang.from_ms == 0) t.hang.from_ms = clamp_to_task(t, e.ms - e.took_ms);
  // The first node's, the job-wide one (the others note the hang without a summary).
  if (e.reason == "hang" && t.hang.summary.empty() && !e.text.empty()) t.hang.summary = e.text;
}

void note_save(task_report& t, const run_event& e) {
  save_span s;
  s.begin_ms = clamp_to_task(t, e.ms);
  s.step = e.step;
  s.reason = e.reason;
  s.exit = e.what == run_event_kind::kExit;
  if (s.exit) {
    t.exit_reason = e.reason;
    t.exit_step = e.step;
  }
  t.saves.push_back(s);
}

// Walks the task's events (in time order) into its saves, marks and ends.
walked walk_events(task_report& t, const std::vector<run_event>& events) {
  walked w;
  for (const run_event& e : events) {
    t.has_events = true;
    const std::int64_t at = clamp_to_task(t, e.ms);
    if (note_write_event(t, e, at)) continue;
    if (e.what == run_event_kind::kFirstStep && t.first_step_ms == 0) {
      t.first_step_ms = at;
      t.first_step = e.step;
      t.untrusted_saves = std::max<std::int64_t>(0, e.figure("untrusted", 0));
    } else if (e.what == run_event_kind::kSave || e.what == run_event_kind::kExit) {
      note_save(t, e);
    } else if (e.what == run_event_kind::kSaved && !t.saves.empty() && t.saves.back().end_ms == 0) {
      t.saves.back().end_ms = at;
      t.saves.back().blocking_ms = std::max<std::int64_t>(0, at - t.saves.back().begin_ms);
    } else if (e.what == run_event_kind::kRestore && t.first_step_ms == 0 && e.took_ms >= 0) {
      w.restore_s += static_cast<double>(e.took_ms) / 1000.0;
    } else if (e.what == run_event_kind::kEnd) {
      t.end_event_ms = at;
      t.last_step = e.step;
      if (e.took_ms >= 0) t.last_agreement_ms = clamp_to_task(t, e.ms - e.took_ms);
    } else if (e.what == run_event_kind::kUncommitted) {
      for (auto s = t.saves.rbegin(); s != t.saves.rend(); ++s)
        if (s->step == e.step) {
          s->uncommitted.push_back(e.figure("rank"));
          break;
        }
    } else if (e.what == run_event_kind::kDeath) {
      w.deaths.push_back(&e);
    } else if (e.what == run_event_kind::kSnapshots) {
      t.snapshot_step = std::max(t.snapshot_step, e.step);
    } else if (e.what == run_event_kind::kHeld) {
      t.held_tasks = std::max<std::int64_t>(0, e.figure("tasks", 0));
    } else if (e.what == run_event_kind::kNotice) {
      note_notice(t, e);
    }
  }
  return w;
}

// A save a rank did not commit is no save to resume from: its time and the training
// before it are lost, and the steps kept are the last committed save's.
void settle_saves(task_report& t) {
  settle_writes(t);
  t.kept_step = -1;
  for (save_span& s : t.saves) {
    if (!s.uncommitted.empty()) s.end_ms = 0;
    if (s.end_ms != 0) t.kept_step = s.step;
  }
  t.loop_finished = t.exit_reason.empty() && t.end_event_ms != 0 && t.task.state == "COMPLETED";
}

// The stragglers' and slow steps' price, within the task's own wall time `total_s`, or
// the line was damaged: said, never summed.
void price_steps(task_report& t, const std::vector<run_event>& events, double total_s) {
  const std::int64_t last = t.last_step >= 0 ? t.last_step : t.exit_step;
  t.straggler = price_stragglers(events, t.first_step >= 0 && last >= t.first_step ? last - t.first_step : -1);
  t.slow = find_slow_steps(events);
  if (t.slow.excess_s > total_s) {
    t.damaged.push_back("step_times (" + report_span(t.slow.excess_s) + " of slow steps in a task of " +
                        report_span(total_s) + ")");
    t.slow = slow_steps{};
  }
  if (t.straggler.priced() && t.straggler.wall_s > total_s) {
    t.damaged.push_back("compute (" + report_span(t.straggler.wall_s) + " waiting for a straggler in a task of " +
                        report_span(total_s) + ")");
    t.straggler = straggler_price{};
  }
}

// The training between the saves, from the first step to rank 0's end (`until`); each
// save's own time goes to its bucket here.
void split_training(task_report& t, std::int64_t until) {
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
}

// Lost training from the stall on was a hang's. With --hang-action=save-exit (exit
// reason hang) the ranks came back from the stall only to save and exit: the save kept
// the steps before it, and the stall itself was the hang's too. A hang the loop came
// back from and saved after (--hang-action=alert, a stall that ended) cost nothing past
// that save: the training after it is the run's, not the hang's.
void mark_hung(task_report& t) {
  const std::int64_t hang_from = t.hang.from_ms;
  const bool saved_after_hang = std::any_of(t.saves.begin(), t.saves.end(), [&](const save_span& s) {
    return s.end_ms != 0 && !s.exit && s.begin_ms >= hang_from;
  });
  if (hang_from == 0 || saved_after_hang) return;
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

// The task's events into saves, marks and the breakdown of its wall time.
void account(task_report& t, const std::vector<run_event>& events) {
  const walked w = walk_events(t, events);
  first_death_of(t, w.deaths);
  settle_saves(t);
  const double total_s = static_cast<double>(t.task.end_ms - t.task.start_ms) / 1000.0;
  price_steps(t, events, total_s);
  if (t.first_step_ms == 0) {  // no step: the whole task went to start-up (or a failure before it)
    t.startup_s = total_s;
  } else {
    t.startup_s = static_cast<double>(t.first_step_ms - t.task.start_ms) / 1000.0;
    const std::int64_t until = t.end_event_ms != 0 ? t.end_event_ms : t.task.end_ms;  // rank 0's end
    t.end_s = static_cast<double>(std::max<std::int64_t>(0, t.task.end_ms - until)) / 1000.0;
    split_training(t, until);
    mark_hung(t);
    for (const auto& sp : t.training)
      (sp.kept      ? t.kept_s
       : sp.hung    ? t.hung_s
       : sp.unsaved ? t.unsaved_s
                    : t.lost_s) += static_cast<double>(sp.to - sp.from) / 1000.0;
  }
  // The restore is part of the time to the first step, apart from the rest of start-up.
  t.restore_s = std::min(w.restore_s, t.startup_s);
  t.startup_s -= t.restore_s;
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
      if (e.what != run_event_kind::kTaskEnd) continue;
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
    std::int64_t slack = kEventsBeforeStartMs;
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
    for (const badput_cause& c : kBadputCauses) r.*c.node_s += n * (t.*c.task_s);
    r.unsaved += n * t.unsaved_s;
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

}  // namespace trainctl
