#include "drill_rehearsal.hpp"

#include <algorithm>
#include <optional>

#include "bad_nodes.hpp"
#include "run_event_kinds.hpp"
#include "user_paths.hpp"

namespace trainctl::commands {
namespace {

using std::chrono::milliseconds;

// A time the drill measured, as a person reads it: 2.0s, 57.7s, 193s.
std::string dur(std::int64_t ms) { return drill_duration(ms); }

}  // namespace

namespace {

// Start-up: the queue (up to 10 minutes), then rank 0's first check(); its event, or
// nullopt (a row says why).
std::optional<run_event> rehearse_start(const drill_setup& s, const drill_job& job, event_watch& w,
                                        std::vector<drill_row>& rows, drill_figures& f, std::string& job1) {
  const auto running = [&] {
    const auto rec = job_record_of(job.id() + "_1");
    return rec && rec->start_ms > 0 && rec->state != "PENDING";
  };
  const bool ran = wait_until(std::chrono::minutes(10), running);
  const run_event* ended = nullptr;  // task 1 ended before any check()
  const bool started = ran && wait_until(s.start_timeout, [&] {
                         w.read();
                         const run_event* first = w.find("first_step");
                         if (first != nullptr) job1 = first->job;
                         ended = first == nullptr ? w.find("task_end") : nullptr;
                         return first != nullptr || ended != nullptr;
                       });
  if (!started || ended != nullptr) {
    f.never_checked = ran && ended == nullptr;
    rows.push_back({"start-up", "every rank reaches check()",
                    ended != nullptr ? "task 1 ended (" + ended->reason +
                                           ") before any rank reached check(); its "
                                           "output is in " +
                                           s.dir
                    : ran ? "task 1 ran " + dur(s.start_timeout.count()) + " and no rank reached check()"
                          : "task 1 did not start in 10 minutes (the queue)",
                    -1, drill_row::kProblem});
    return std::nullopt;
  }
  const run_event first = *w.find("first_step");
  const auto rec = job_record_of(job1);
  const double startup = rec && rec->start_ms > 0 ? (first.ms - rec->start_ms) / 1000.0 : -1;
  rows.push_back({"start-up", "every rank reaches check()",
                  "rank 0's first check() at step " + std::to_string(first.step) + " after the task started", startup,
                  drill_row::kOk});
  return first;
}

// The save switch: one save, at one step, on every rank.
void rehearse_save_switch(const drill_setup& s, event_watch& w, const std::string& job1, std::vector<drill_row>& rows,
                          drill_figures& f) {
  if (s.opts.save_switch.empty()) {
    rows.push_back({"save switch", "every rank saves once, at one step", "no --save-switch in the script", -1,
                    drill_row::kSkipped});
  } else {
    const std::int64_t touched = unix_ms_now();
    const std::string why = touch_switch(s.opts.save_switch);
    const run_event* saved = nullptr;
    const run_event* save = nullptr;
    const run_event* exit = nullptr;  // the deadline's, before the switch's save: that one ends the wait
    const bool done = why.empty() && wait_until(milliseconds(std::max<std::int64_t>(120000, 3 * s.lead_ms)), [&] {
                        w.read();
                        save = w.find("save", job1, touched, "save-switch");
                        saved = save != nullptr ? w.after(*save, "saved") : nullptr;
                        exit = save == nullptr ? w.find("exit", job1, touched) : nullptr;
                        return saved != nullptr || exit != nullptr;
                      });
    if (done && exit != nullptr) {
      rows.push_back(
          {"save switch", "every rank saves once, at one step",
           "the deadline's exit came " + dur(exit->ms - touched) + " after the touch, before any save of the switch's",
           -1, drill_row::kSkipped});
    } else if (done) {
      f.longest_save_ms = std::max(f.longest_save_ms, saved->took_ms);
      rows.push_back({"save switch", "every rank saves once, at one step",
                      "saved at step " + std::to_string(save->step) + "; the save took " + dur(saved->took_ms),
                      (saved->ms - touched) / 1000.0, drill_row::kOk});
    } else {
      rows.push_back(
          {"save switch", "every rank saves once, at one step",
           why.empty() ? "no save in " + dur(std::max<std::int64_t>(120000, 3 * s.lead_ms)) + " after the touch" : why,
           -1, drill_row::kProblem});
    }
  }
}

// A hang found before the drill stops anything is the loop's own: watched for one hang
// timeout of plain training first (an evaluation, a save of the loop's own). True when
// one was found (a row says so).
bool own_hang_first(const drill_setup& s, event_watch& w, const std::string& job1, const run_event& first,
                    std::vector<drill_row>& rows, drill_figures& f) {
  if (s.hang_ms > 0)
    wait_until(milliseconds(s.hang_ms + 10000), [&] {
      w.read();
      return w.find("notice", job1, 0, "hang") != nullptr;
    });
  w.read();
  if (const run_event* early = w.find("notice", job1, 0, "hang")) {
    f.false_hang = true;
    rows.push_back({"hang", "no hang before the drill makes one",
                    "a hang was found " + dur(early->ms - first.ms) +
                        " after the first check(), before any rank was "
                        "stopped",
                    -1, drill_row::kProblem});
    return true;
  }
  return false;
}

// A rank stopped (SIGSTOP) for longer than the hang timeout: every rank's stacks, the
// stopped rank named. Sets *resumed_ms to when it went on; false when the hang's action
// ended task 1 (nothing more to rehearse there).
bool rehearse_hang(const drill_setup& s, event_watch& w, const std::string& job1, const run_event& first,
                   std::vector<drill_row>& rows, std::int64_t* resumed_ms) {
  const run_event* early_exit = w.find("exit", job1);
  if (s.hang_ms <= 0 || early_exit != nullptr) {
    rows.push_back({"hang", "every rank's stacks, the stopped rank named",
                    early_exit == nullptr ? s.hang_note
                                          : "the deadline came " + dur(early_exit->ms - first.ms) +
                                                " after the first check(), before the drill could stop a rank",
                    -1, drill_row::kSkipped});
  } else {
    int rank = 1;
    std::int64_t stopped = unix_ms_now();  // before srun reaches the node
    std::string line = signal_rank(job1, rank, "STOP");
    if (line.empty()) {
      stopped = unix_ms_now();
      line = signal_rank(job1, rank = 0, "STOP");
    }
    const run_event* hang = nullptr;
    const bool found = !line.empty() && wait_until(milliseconds(s.hang_ms + 120000), [&] {
      w.read();
      hang = w.find("notice", job1, stopped, "hang");
      return hang != nullptr;
    });
    const std::int64_t hang_at = found ? hang->ms : 0;
    if (!line.empty()) signal_rank(job1, rank, "CONT");
    *resumed_ms = unix_ms_now();
    if (line.empty()) {
      rows.push_back({"hang", "every rank's stacks, the stopped rank named", "no node had rank 0 or 1 to stop", -1,
                      drill_row::kProblem});
    } else if (!found) {
      rows.push_back({"hang", "every rank's stacks, the stopped rank named",
                      "rank " + std::to_string(rank) + " stopped; no hang found in " + dur(s.hang_ms + 120000), -1,
                      drill_row::kProblem});
    } else {
      std::string summary;
      wait_until(milliseconds(15000),
                 [&] { return !(summary = hang_summary(line_field(line, "log_dir"), job1)).empty(); });
      const stopped_rank_naming naming = stopped_rank_in_summary(summary, rank);
      const std::string said =
          naming == stopped_rank_naming::named ? "; the summary names it"
          : naming == stopped_rank_naming::cannot_tell
              ? "; with so few ranks the stacks single out none, and the summary says so: " + summary
              : "; the summary does not name it: " + summary;
      rows.push_back({"hang", "every rank's stacks, the stopped rank named",
                      "rank " + std::to_string(rank) + " stopped on " + line_field(line, "host") + "; stacks " +
                          dur(hang_at - stopped - s.hang_ms) + " after the " + dur(s.hang_ms) + " timeout" + said +
                          s.hang_note,
                      (hang_at - stopped) / 1000.0,
                      naming == stopped_rank_naming::not_named ? drill_row::kProblem : drill_row::kOk});
    }
    if (!s.hang_alert) {
      rows.push_back({"notice", "every rank saves and exits at one step, before the end",
                      std::string("the hang's action (") +
                          (s.opts.hang.action == hang_action::end_step ? "end-step" : "save-exit") +
                          ", written into the script) ended task 1 first",
                      -1, drill_row::kSkipped});
      return false;
    }
  }
  return true;
}

// The graceful exit's notice: the time limit's deadline, as the real run's.
void rehearse_notice(const drill_setup& s, event_watch& w, const std::string& job1, std::vector<drill_row>& rows,
                     drill_figures& f) {
  const auto rec1 = job_record_of(job1);
  const std::int64_t end_ms = rec1 ? rec1->end_ms : 0;
  const run_event* exit = nullptr;
  const run_event* end = nullptr;
  const bool exited = wait_until(milliseconds(std::max<std::int64_t>(end_ms - unix_ms_now(), 0) + 60000), [&] {
    w.read();
    exit = w.find("exit", job1);
    // The task's end (its batch script's supervisor writes it: the plugin, or `trainctl-run
    // --batch` as the template runs it), else rank 0's own end: a script of plain `srun
    // trainctl-run` lines has no batch supervisor, and rank 0 notes nothing after its end.
    end = w.find("task_end", job1);
    if (end == nullptr) end = w.find("end", job1);
    return end != nullptr;
  });
  const run_event* saved = exit != nullptr ? w.after(*exit, "saved") : nullptr;
  if (saved != nullptr) f.longest_save_ms = std::max(f.longest_save_ms, saved->took_ms);
  if (exited && exit != nullptr && saved != nullptr) {
    const std::int64_t margin = end_ms - saved->ms;
    rows.push_back({"notice", "every rank saves and exits at one step, before the end",
                    "exit at step " + std::to_string(exit->step) + " (" + exit->reason + "); " +
                        (margin > 0 ? "saved " + dur(margin) + " before the end"
                                    : "its save ended " + dur(-margin) +
                                          " after the end, in SLURM's KillWait (where that is shorter, it is cut)") +
                        " (lead " + dur(s.lead_ms) + ")",
                    exit->ms > 0 && end_ms > 0 ? (saved->ms - exit->ms) / 1000.0 : -1,
                    margin > 0 ? drill_row::kOk : drill_row::kProblem});
  } else {
    rows.push_back({"notice", "every rank saves and exits at one step, before the end",
                    exit == nullptr ? "no exit before task 1 ended" : "the exit's save never finished", -1,
                    drill_row::kProblem});
  }
}

// A hang found well after the stopped rank went on is the loop's own again.
void late_hangs(event_watch& w, const std::string& job1, std::int64_t resumed_ms, std::vector<drill_row>& rows,
                drill_figures& f) {
  if (resumed_ms > 0)
    for (const run_event& e : w.read())
      if (e.what == run_event_kind::kNotice && e.reason == "hang" && e.job == job1 && e.ms > resumed_ms + 5000 &&
          !f.false_hang) {
        f.false_hang = true;
        rows.push_back({"hang", "no hang but the drill's",
                        "another hang was found " + dur(e.ms - resumed_ms) + " after the stopped rank went on", -1,
                        drill_row::kProblem});
      }
}

// Task 1's saves that ended (rank 0's "saved" after a save or exit decision): their
// steps, oldest first.
std::vector<std::int64_t> saved_steps_of(event_watch& w, const std::string& job1) {
  std::vector<std::int64_t> saved_steps;
  const run_event* pending = nullptr;
  for (const run_event& e : w.read()) {
    if (e.job != job1) continue;
    if (e.what == run_event_kind::kSave || e.what == run_event_kind::kExit) pending = &e;
    if (e.what == run_event_kind::kSaved && pending != nullptr) saved_steps.push_back(pending->step);
  }
  return saved_steps;
}

}  // namespace

// Task 1's events: start-up, the save switch, the hang, the notice. Fills rows and figures.
void rehearse_task_one(const drill_setup& s, const drill_job& job, event_watch& w, std::vector<drill_row>& rows,
                       drill_figures& f, std::string& job1) {
  const std::optional<run_event> first = rehearse_start(s, job, w, rows, f, job1);
  if (!first) return;
  rehearse_save_switch(s, w, job1, rows, f);
  if (own_hang_first(s, w, job1, *first, rows, f)) return;
  std::int64_t resumed_ms = 0;  // when the stopped rank went on
  if (!rehearse_hang(s, w, job1, *first, rows, &resumed_ms)) return;
  rehearse_notice(s, w, job1, rows, f);
  late_hangs(w, job1, resumed_ms, rows, f);
}

namespace {

// A rank of task 2 (`job2`) killed: the culprit named, the node not blamed, the run's
// end recorded, and what the supervisors wrote out of a loop that keeps snapshots.
void rehearse_rank_killed(event_watch& w, const std::string& job2, std::vector<drill_row>& rows) {
  const std::int64_t killed = unix_ms_now();  // before srun reaches the node: the death comes after
  const std::string line = signal_rank(job2, 1, "KILL");
  const std::string host = line_field(line, "host");
  if (line.empty()) {
    rows.push_back({"rank killed", "the culprit named, the node not blamed, the end recorded",
                    "no node had rank 1 to kill", -1, drill_row::kSkipped});
    return;
  }
  // Every node writes its own first death; the job's first is the earliest (as trainctl
  // report names it), once the task's end is recorded after them.
  wait_until(milliseconds(120000), [&] {
    w.read();
    return w.find("task_end", job2) != nullptr;
  });
  const run_event* death = nullptr;
  for (const run_event& e : w.read())
    if (e.what == run_event_kind::kDeath && e.job == job2 &&
        (death == nullptr || e.figure("at", e.ms) < death->figure("at", death->ms)))
      death = &e;
  const run_event* end = w.find("task_end", job2);  // from the same read as the deaths
  bool blamed = false;
  for (const bad_node& b : read_bad_nodes(bad_nodes_path()))
    if (b.job == job2 && b.when * 1000 >= killed - 5000 && b.host == host) blamed = true;
  // The first death must be the one the drill caused: its signal, on its node (and its
  // rank, where the node state still knew it).
  const int named = death != nullptr ? static_cast<int>(death->figure("rank")) : -1;
  const bool culprit =
      death != nullptr && death->reason == "SIGKILL" && death->node == host && (named == 1 || named < 0);
  std::string happened = death == nullptr ? "no rank's death was recorded"
                         : named >= 0     ? "rank " + std::to_string(named) + "'s death named first (" + death->reason +
                                            " on " + death->node + ")"
                                      : "a death on " + death->node + " named first (" + death->reason + ")";
  happened += blamed ? "; node " + host + " blamed for it" : "; no node blamed";
  happened += end != nullptr ? "; the run's end recorded (" + end->reason + ")" : "; no end recorded";
  // A loop that keeps snapshots (ctl.snapshot): what its supervisors wrote out after the death.
  if (const run_event* snaps = w.find(run_event_kind::kSnapshots, job2))
    happened += "; the supervisors wrote out the ranks' snapshots, the newest of step " + std::to_string(snaps->step) +
                ": the next task resumes from the newest every rank has";
  const bool ok = culprit && !blamed && end != nullptr;
  rows.push_back({"rank killed", "the culprit named, the node not blamed, the end recorded", happened,
                  death != nullptr ? (death->figure("at", death->ms) - killed) / 1000.0 : -1,
                  ok ? drill_row::kOk : drill_row::kProblem});
}

}  // namespace

// Task 2's events: the resume from task 1's last save, then a rank killed.
void rehearse_task_two(event_watch& w, const std::string& job1, std::vector<drill_row>& rows, drill_figures& f) {
  // The resume goes to the newest save every rank committed, which may be an earlier one
  // when the last was cut.
  const std::vector<std::int64_t> saved_steps = saved_steps_of(w, job1);
  const std::int64_t last_saved_step = saved_steps.empty() ? -1 : saved_steps.back();
  std::string job2;
  const run_event* first2 = nullptr;
  const bool started = wait_until(std::chrono::minutes(10), [&] {
    w.read();
    for (const run_event& e : w.read())
      if (e.what == run_event_kind::kFirstStep && e.job != job1) {
        first2 = &e;
        job2 = e.job;
        return true;
      }
    return false;
  });
  if (!started) {
    rows.push_back({"resume", "task 2 starts after the last complete save", "task 2 never reached check()", -1,
                    drill_row::kProblem});
    return;
  }
  const run_event first = *first2;
  const run_event* restore = w.find("restore", job2);
  const auto rec2 = job_record_of(job2);
  const bool after_a_save = std::find(saved_steps.begin(), saved_steps.end(), first.step - 1) != saved_steps.end();
  const bool right = saved_steps.empty() ? first.step == 0 : after_a_save;
  f.resumed_at_zero = !saved_steps.empty() && first.step == 0;
  std::string whence = " (task 1 saved nothing)";
  if (!saved_steps.empty())
    whence = first.step == last_saved_step + 1 ? " (task 1's last save: step " + std::to_string(last_saved_step) + ")"
             : after_a_save ? " (an earlier save of task 1: its last, step " + std::to_string(last_saved_step) +
                                  ", was not complete on every rank)"
                            : " (task 1's last save: step " + std::to_string(last_saved_step) + ")";
  rows.push_back({"resume", "task 2 starts at the step after the last complete save",
                  "task 2 started at step " + std::to_string(first.step) + whence +
                      (restore != nullptr ? "; restore took " + dur(restore->took_ms) : ""),
                  rec2 && rec2->start_ms > 0 ? (first.ms - rec2->start_ms) / 1000.0 : -1,
                  right ? drill_row::kOk : drill_row::kProblem});

  rehearse_rank_killed(w, job2, rows);
}

}  // namespace trainctl::commands
