#include "run_end.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>
#include <vector>

#include "bad_node_contrast.hpp"
#include "bad_nodes.hpp"
#include "beat_fields.hpp"
#include "bounded_append.hpp"
#include "breaker_fields.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "no_progress.hpp"
#include "node_names.hpp"
#include "node_state.hpp"
#include "once_markers.hpp"
#include "parse.hpp"
#include "rank_views.hpp"
#include "run_event_kinds.hpp"
#include "run_events.hpp"
#include "save_commits.hpp"
#include "slurm_api.hpp"
#include "slurm_job.hpp"
#include "slurm_release.hpp"
#include "step_presence.hpp"
#include "straggler_fields.hpp"
#include "subprocess.hpp"

namespace trainctl {
namespace {

using std::chrono::milliseconds;

}  // namespace

std::string preempted_marker(const std::string& job_id) {
  const std::string restart = env_text(env_var::kSlurmRestartCount);
  return "once.preempted." + job_id + "." + (restart.empty() ? "0" : restart);
}

// This run's place in its array (run_progress.hpp): its job, array index and restart.
array_run run_end::this_run() const {
  array_run r;
  r.job = opts_.job_id;
  const std::string task = env_text(env_var::kSlurmArrayTaskId), restart = env_text(env_var::kSlurmRestartCount);
  r.task = all_digits(task, 9) ? std::stoll(task) : -1;
  r.restart = restart.empty() ? 0 : all_digits(restart, 9) ? std::stoll(restart) : -1;
  return r;
}

int run_end::start(pid_t adopt, node_state* ns) {
  started_ms_ = unix_now_ms();
  if (opts_.job_id.empty() || opts_.no_progress_runs <= 0) return -1;
  std::string why;
  const std::vector<run_event> events = read_own_run_events_bounded(opts_.notices, &why);
  if (!why.empty()) {
    if (opts_.batch) log_.line("the no-progress breaker cannot judge this run: %s", why.c_str());
    return -1;
  }
  const std::vector<array_run> runs = array_runs(events);
  breaker_ = judge_breaker(runs, this_run(), opts_.no_progress_runs);
  if (breaker_.what == breaker_verdict::end_now) {
    log_.line(
        "job %s of this array ended on no progress (its runs failed without getting past their first step): not "
        "starting %s; its log says how they ended: fix that and submit again",
        breaker_.ended_job.c_str(), adopt > 0 ? "the task" : "the command");
    if (adopt > 0) {
      kill(adopt, SIGKILL);
      waitpid(adopt, nullptr, 0);
    }
    no_progress_ = true;
    if (opts_.batch) {
      cancel_rest_of_array();  // what the run the breaker ended could not
      note_task_end(0, false);
    }
    return kNoProgressExit << 8;
  }
  if (breaker_.what != breaker_verdict::armed) return -1;
  if (ns != nullptr) breaker_fields::arm(*ns, breaker_.at_step, breaker_.count.runs);
  if (opts_.batch || ns == nullptr)
    log_.line(
        "no progress: the last %d runs of this array (jobs %s) %s without getting past step %lld: this run ends "
        "at its first step if it resumes there again (--no-progress-runs=%d)%s",
        breaker_.count.runs, breaker_.count.jobs.c_str(), how_runs_ended(runs, breaker_.count.jobs).c_str(),
        static_cast<long long>(breaker_.at_step), opts_.no_progress_runs,
        ns != nullptr ? "" : "; but the node state was refused above: not in this step");
  return -1;
}

std::optional<std::string> run_end::judge(int child_status, bool interrupted) {
  if (opts_.job_id.empty() || opts_.no_progress_runs <= 0 || no_progress_) return std::nullopt;
  std::string why;
  const std::vector<run_event> events = read_own_run_events_bounded(opts_.notices, &why);
  if (!why.empty()) return std::nullopt;
  std::vector<array_run> runs = array_runs(events);
  std::string detail, jobs;
  if (breaker_ended_run(events, opts_.job_id, started_ms_)) {
    // The counted runs ended before this one: its own (open) run is none of them, even
    // where they share its job id (a requeued job).
    runs.erase(std::remove_if(runs.begin(), runs.end(),
                              [this](const array_run& r) { return r.job == opts_.job_id && r.end_ms == 0; }),
               runs.end());
    // This supervisor may not have armed it (its read failed; a step's supervisor did).
    jobs = breaker_.what == breaker_verdict::armed ? breaker_.count.jobs : "";
    detail = !jobs.empty()
                 ? "jobs " + jobs + " " + how_runs_ended(runs, jobs) + " without getting past step " +
                       std::to_string(breaker_.at_step) + ", and this one resumed there too"
                 : std::string("the array's last runs failed without getting past the step this one resumed at");
  } else {
    if (interrupted || task_end_reason(child_status) != "failed" || was_claimed(preempted_marker(opts_.job_id)))
      return std::nullopt;
    array_run now;
    if (!ending_run(runs, &now)) return std::nullopt;
    // One run that died before its first check() is no loop: the one before it must have too.
    const progress_count c = runs_failing_before_check(runs, now);
    if (c.runs < std::max(2, opts_.no_progress_runs)) return std::nullopt;
    jobs = c.jobs;
    detail = "jobs " + jobs + " " + how_runs_ended(runs, jobs) + " before their first check(), this one too";
  }
  no_progress_ = true;
  log_.line("no progress: %s: this run ends with exit status %d%s", detail.c_str(), kNoProgressExit,
            env_text(env_var::kSlurmArrayJobId).empty() ? "" : "; cancelling the array's pending tasks");
  cancel_rest_of_array();
  forgive_crash_loop_nodes(runs, jobs);
  return detail;
}

// The run ending now as its events have it (its first step, its deaths), in its place.
// False when an earlier run of this job that nobody ended shares its events: unknown.
bool run_end::ending_run(const std::vector<array_run>& runs, array_run* r) const {
  *r = this_run();
  r->start_ms = started_ms_;
  for (const array_run& seen : runs) {
    if (seen.job != r->job || seen.end_ms != 0) continue;
    if (seen.start_ms < started_ms_ - 1000) return false;
    r->first_step = seen.first_step;
    r->death_ms = seen.death_ms;
    r->death_step = seen.death_step;
    r->death_how = seen.death_how;
  }
  return true;
}

// scancel --state=PENDING of this array, with one line when it fails.
void run_end::cancel_rest_of_array() const {
  const std::string array = env_text(env_var::kSlurmArrayJobId);
  std::string error, spared;
  if (!array.empty() && !cancel_pending_tasks(array, milliseconds(10000), &error, &spared))
    log_.line("could not cancel the pending tasks of array %s (%s): each ends at once when it starts", array.c_str(),
              error.c_str());
  if (!spared.empty())
    log_.line("left pending: %s, requeued after a run of its own (a preemption, or by hand): its work goes on",
              spared.c_str());
}

void run_end::hold_rest_of_array(const std::string& path) const {
  const std::string array = env_text(env_var::kSlurmArrayJobId);
  if (array.empty() || opts_.job_id.empty()) return;
  // Once per job on this node: the batch step's supervisor and the first task's of a
  // step both know the switch (the plugin's), or only one does (trainctl-run's).
  try {
    if (!claim_once("once.held." + opts_.job_id + ".0")) return;
  } catch (const std::exception&) {  // no private state directory: held twice at worst
  }
  std::string error;
  const pending_array_tasks pending = pending_tasks(array, milliseconds(10000), &error);
  if (pending.count == 0) return;  // the array's last task: nothing waits
  // By their ids: the array's id would name its ended tasks too, which scontrol refuses.
  const std::string ids = pending.ids.empty() ? array : pending.ids;
  if (pending.count > 0 && hold_pending_tasks(ids, milliseconds(10000), &error)) {
    log_.line("kill switch %s: the pending tasks of array %s (%d) are held; to go on: rm %s && scontrol release %s",
              path.c_str(), array.c_str(), pending.count, path.c_str(), ids.c_str());
    run_event e = make_run_event(run_event_kind::kHeld, opts_.job_id, unix_now_ms());  // for trainctl report
    e.reason = "kill-switch";
    e.figures.emplace_back("tasks", pending.count);
    append_event_bounded(format_run_event(e), "cannot note the held tasks for `trainctl report`");
    return;
  }
  log_.line(
      "kill switch %s: could not hold the pending tasks of array %s (%s): each starts and ends at once while the "
      "switch is there (scancel %s ends them)",
      path.c_str(), array.c_str(), error.c_str(), array.c_str());
}

// The runs the breaker counted (`jobs`) all died at one step, or before any: the crash
// is the program's, not the nodes'. Their crash findings leave the bad-node memory (in a
// child: the home may stall), and the log says which nodes were forgiven. Runs that died
// at different steps keep them: a node failing at random times looks like that.
void run_end::forgive_crash_loop_nodes(const std::vector<array_run>& runs, const std::string& jobs_text) const {
  const std::string path = bad_nodes_path();
  if (path.empty() || jobs_text.empty()) return;
  std::vector<std::string> jobs;
  for (std::string_view j : split(jobs_text, ' '))
    if (!j.empty()) jobs.emplace_back(j);
  std::string differs;
  const bool forgive = died_at_one_step(runs, jobs_text, &differs);
  child_spec spec;
  spec.deadline = milliseconds(10000);
  spec.ignore_signals = opts_.notices;
  // The child prints the nodes (" n1, n2,"), or "!" and why it could not.
  spec.work = [path, jobs, forgive] {
    const auto crash_of_loop = [&jobs](const bad_node& b) {
      return b.reason.rfind("crashed", 0) == 0 && std::find(jobs.begin(), jobs.end(), b.job) != jobs.end();
    };
    std::vector<bad_node> found;
    if (forgive) {
      std::size_t removed = 0;
      const std::string why = forget_findings(path, crash_of_loop, &removed, &found);
      if (!why.empty()) return "!" + why;
    } else {
      for (const bad_node& b : read_bad_nodes(path))
        if (crash_of_loop(b)) found.push_back(b);
    }
    std::string hosts;
    for (const auto& b : found)
      if (hosts.find(" " + b.host + ",") == std::string::npos) hosts += " " + b.host + ",";
    return hosts;
  };
  const child_result r = run_child(spec);
  if (!r.ok() || (!r.output.empty() && r.output[0] == '!')) {
    log_.line("could not %s the nodes the crash loop blamed: %s", forgive ? "forgive" : "read",
              r.ok() ? r.output.c_str() + 1 : r.error.c_str());
  } else if (!r.output.empty() && forgive) {
    const std::string hosts = r.output.substr(1, r.output.size() - 2);
    log_.line("forgave %s: the runs died at the same step each time, so the crash is the program's, not the nodes'",
              hosts.c_str());
  } else if (!r.output.empty()) {
    const std::string hosts = r.output.substr(1, r.output.size() - 2);
    log_.line("kept the crash findings against %s: %s", hosts.c_str(), differs.c_str());
  }
}

// SLURM before 24.05 would count a job whose batch script ended within the preemption's
// grace as finished: put it back in the queue, as preemption with requeue would have at
// the end of the grace. Later releases requeue it themselves, and a second requeue
// there loops. The release is this node's, asked now (slurm_release.hpp).
void run_end::requeue_if_preempted(bool maybe_preempted) {
  // No preemption seen, by this supervisor (a TERM, an answer) or by a step's on this
  // node: no question to the controller at every batch script's end.
  if (opts_.job_id.empty() || (!maybe_preempted && !was_claimed(preempted_marker(opts_.job_id)))) return;
  std::string error;
  const auto jt = trainctl::query_job(opts_.job_id, milliseconds(10000), &error);
  if (!jt || !jt->preempting) return;
  if (!jt->requeue) {
    log_.line("the job was preempted and is not requeueable (submit with --requeue to resume it)");
    return;
  }
  const slurm_release slurm = slurm_release_here(milliseconds(10000));
  if (requeues_preempted_jobs(slurm)) {
    log_.line("the job was preempted: SLURM %s requeues it to resume", slurm.text().c_str());
    return;
  }
  if (slurm.source != "scontrol --version") log_.line("SLURM %s is %s", slurm.text().c_str(), slurm.source.c_str());
  if (requeue_job(opts_.job_id, milliseconds(10000), &error))
    log_.line("the job was preempted: requeued it to resume");
  else
    log_.line("the job was preempted but could not be requeued: %s", error.c_str());
}

void run_end::note_task_end(int child_status, bool preempted) {
  if (opts_.job_id.empty()) return;
  run_event e = make_run_event(run_event_kind::kTaskEnd, opts_.job_id, unix_now_ms());
  e.task = this_run().task;
  e.restart = this_run().restart;
  e.reason = no_progress_                                               ? "no-progress"
             : preempted || was_claimed(preempted_marker(opts_.job_id)) ? "preempted"
                                                                        : task_end_reason(child_status);
  e.node = node_name();
  append_event_bounded(format_run_event(e), "cannot note how this run ended (the no-progress count reads it)");
  if (e.reason == "ok") convict_where_this_program_crashed(e.node);
}

// This program (the array) ran cleanly here: a node where it crashed (a suspicion) may
// now be convicted by contrast (bad_node_contrast.hpp). In a child: the home may stall.
void run_end::convict_where_this_program_crashed(const std::string& here) const {
  const std::string array = env_text(env_var::kSlurmArrayJobId), path = bad_nodes_path();
  if (array.empty() || path.empty()) return;
  child_spec spec;
  spec.deadline = milliseconds(10000);
  spec.ignore_signals = opts_.notices;
  spec.work = [array, path, here] {
    const std::int64_t now = unix_now_ms() / 1000;
    const std::chrono::seconds expiry = bad_node_expiry();
    std::set<std::string> crashed_on;
    for (const bad_node& b : read_bad_nodes(path))
      if (now - b.when < expiry.count() && b.host != here && suspicion_array(b) == array) crashed_on.insert(b.host);
    std::string said;
    for (const std::string& host : crashed_on) {
      const std::string line = convict_by_contrast(path, host, now, expiry);
      if (!line.empty()) said += line + "\n";
    }
    return said;
  };
  const child_result r = run_child(spec);
  std::istringstream lines(r.ok() ? r.output : "could not judge the nodes where this program crashed: " + r.error);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) log_.line("%s", line.c_str());
}

// What a straggler cost (`trainctl report`): each rank's work per step over the steps
// the ranks timed and the slowest rank's (the agreement's). A rank process that a
// launcher restarted counts from its restart.
void run_end::note_compute(const node_state& ns) {
  const std::string job = env_text(env_var::kSlurmJobId);
  if (!env_set(env_var::kSlurmJobId)) return;
  run_event e = make_run_event(run_event_kind::kCompute, job, unix_now_ms());
  std::int64_t steps = 0, slowest_us = 0, marked = 1;
  for (const rank_beat& b : ns.beats) {
    const straggler_fields::work_totals w = straggler_fields::work(b);
    const std::int64_t n = w.timed_steps;
    const std::int32_t rank = beat_fields::read(b).rank;
    if (n <= 0 || rank < 0) continue;
    e.works.emplace_back(rank, w.total_us / n);
    if (!w.marked) marked = 0;
    if (n > steps) {
      steps = n;
      slowest_us = w.slowest_total_us / n;
    }
  }
  if (e.works.empty()) return;
  e.figures = {{"steps", steps}, {"slowest_us", slowest_us}, {"marked", marked}};
  append_event_bounded(format_run_event(e), "cannot note the ranks' step times for `trainctl report`");
}

void run_end::note_commits(const node_state& ns) {
  std::vector<rank_save> ranks;
  for (const rank_view& v : newest_rank_views(ns))
    ranks.push_back({v.rank, v.asked_step, v.asked_ms, v.committed_step, v.committed_ms, v.pending_step, v.pending_ms});
  const auto commits = judge_save_commits(ranks);
  if (!commits) return;
  const std::string node = env_text(env_var::kSlurmdNodename);
  const std::int64_t now = unix_now_ms();
  for (const std::string& line : {save_commits_line(*commits, node), cut_writes_line(*commits, node, now)})
    if (!line.empty()) log_.line("%s", line.c_str());
  if (opts_.job_id.empty()) return;
  append_event_bounded(save_commits_events(*commits, opts_.job_id, node, now),
                       "cannot note which ranks committed the last save for `trainctl report`");
}

void run_end::note_snapshots(std::int64_t newest, std::int64_t oldest, int ranks) const {
  if (opts_.job_id.empty() || ranks == 0) return;
  run_event e = make_run_event(run_event_kind::kSnapshots, opts_.job_id, unix_now_ms());
  e.step = newest;
  e.node = node_name();
  e.figures.emplace_back("ranks", ranks);
  e.figures.emplace_back("oldest", oldest);
  append_event_bounded(format_run_event(e), "cannot note the snapshots written out for `trainctl report`");
}

void run_end::note_death(const node_health::program_death& d) {
  if (opts_.job_id.empty()) return;
  run_event e = make_run_event(run_event_kind::kDeath, opts_.job_id, unix_now_ms());
  e.step = d.step;
  e.reason = WIFSIGNALED(d.status) ? "SIG" + signal_name(WTERMSIG(d.status)) : "exit";
  e.node = node_name();
  if (d.rank >= 0) e.figures.emplace_back("rank", d.rank);
  if (d.died_ms > 0) e.figures.emplace_back("at", d.died_ms);
  if (WIFEXITED(d.status)) e.figures.emplace_back("status", WEXITSTATUS(d.status));
  if (d.oom >= 0) e.figures.emplace_back("oom", d.oom);
  // The clock `at` was read on: the report orders the nodes' deaths by it.
  const clock_facts c = this_clock();
  if (!c.boot.empty()) e.figures.emplace_back("boot", text_figure(c.boot));
  if (c.max_error_us >= 0) {
    e.figures.emplace_back("synced", c.synced ? 1 : 0);
    e.figures.emplace_back("max_error_us", c.max_error_us);
  }
  e.text = d.error;
  append_event_bounded(format_run_event(e), "cannot note how the ranks died (the no-progress breaker reads it)");
}

// Written from the hang's dump, not the loop's hot path, and in a child with a limit:
// the home may be the stalled mount the ranks hang on.
void run_end::note_hang(std::int64_t stall_ms, const std::string& summary) {
  const std::string job = env_text(env_var::kSlurmJobId);
  if (!env_set(env_var::kSlurmJobId)) return;
  run_event e = make_run_event(run_event_kind::kNotice, job, unix_now_ms());
  e.reason = "hang";
  e.took_ms = stall_ms;
  // The first node's summary is the whole job's; another node's is of its own ranks.
  const std::string node = env_text(env_var::kSlurmNodeid);
  if (node.empty() || node == "0") e.text = summary;  // its first 1,000 characters (run_events.hpp)
  append_event_bounded(format_run_event(e), "cannot note the hang for `trainctl report`");
}

// Appends a line to the run events in a child with a 5 s limit; says why not.
void run_end::append_event_bounded(const std::string& line, const char* what) const {
  const std::string path = own_run_events_path();
  child_spec spec;
  spec.deadline = milliseconds(5000);
  spec.ignore_signals = opts_.notices;
  spec.work = [path, line] {
    // The run events of arrays nothing wrote to for 90 days go (docs/users.md says so).
    sweep_old_files(run_events_dir(), kRunEventsKeepS);
    return append_run_events(path, line);
  };
  const child_result r = run_child(spec);
  const std::string why = r.ok() ? r.output : r.error;
  if (!why.empty()) log_.line("%s: %s", what, why.c_str());
}

}  // namespace trainctl
