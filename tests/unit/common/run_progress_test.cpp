#include "run_progress.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>
#include <vector>

using namespace trainctl;

namespace {

// Array task N is job 100 + N (job 101 is task 1); a single job (id < 100) is no array.
std::int64_t task_of(const std::string& job) { return std::stoll(job) >= 100 ? std::stoll(job) - 100 : -1; }

// The events of one run: its first step (-1: none), its end (reason; "" none), at
// [start, end] seconds, with a preemption notice or not, its restart count.
void run(std::vector<run_event>& ev, const std::string& job, std::int64_t start_s, std::int64_t end_s,
         std::int64_t first, const std::string& end, bool preempted = false, std::int64_t restart = 0) {
  ev.push_back({start_s * 1000, job, "first_step", first, -1, ""});
  if (first < 0) ev.back().what = "end";  // a run whose loop never reached check(): some other event
  if (preempted) ev.push_back({start_s * 1000 + 1, job, "notice", -1, -1, "preempted"});
  if (!end.empty()) ev.push_back({end_s * 1000, job, "task_end", -1, -1, end, task_of(job), restart});
}

// The run going now: job, the step it resumed at (-1: not yet), its restart count.
array_run now(const std::string& job, std::int64_t first = -1, std::int64_t restart = 0) {
  array_run r;
  r.job = job;
  r.first_step = first;
  r.task = task_of(job);
  r.restart = restart;
  return r;
}

int count(const std::vector<run_event>& ev, const std::string& current, std::int64_t first) {
  return runs_without_progress(array_runs(ev), now(current, first)).runs;
}

}  // namespace

// Three tasks that each resumed at step 0 and failed, and a fourth that resumed at 0
// again: three runs in a row made no progress.
TEST(RunProgress, ACrashLoopCountsEveryFailedRunThatTheNextResumedNoLaterThan) {
  std::vector<run_event> ev;
  run(ev, "101", 0, 60, 0, "failed");
  run(ev, "102", 70, 130, 0, "failed");
  run(ev, "103", 140, 200, 0, "failed");
  ev.push_back({210000, "104", "first_step", 0, -1, ""});  // the run going now
  const auto c = runs_without_progress(array_runs(ev), now("104", 0));
  EXPECT_EQ(c.runs, 3);
  EXPECT_EQ(c.jobs, "101 102 103");
  EXPECT_EQ(c.step, 0);
  EXPECT_EQ(count(ev, "104", -1), 0) << "the run going now has not told where it resumed";
}

// Failed runs that each resumed later than the one before made progress (a save, the
// loop's own or trainctl's, that the next run used).
TEST(RunProgress, RunsThatResumedLaterMadeProgressHoweverTheyEnded) {
  std::vector<run_event> ev;
  run(ev, "101", 0, 60, 0, "failed");
  run(ev, "102", 70, 130, 100, "failed");
  run(ev, "103", 140, 200, 100, "failed");
  EXPECT_EQ(count(ev, "104", 100), 2) << "102 and 103 went nowhere; 101's save was used";
  EXPECT_EQ(count(ev, "104", 300), 0);
}

// What stops the count: a run that ended well, a preempted run, a run that never reached
// check(), a run whose end nobody wrote, and tasks that ran side by side (a sweep).
TEST(RunProgress, OnlyEvidenceCounts) {
  // 101 and 103 failed where they began; 102 in between, each way that stops the count
  // at 103 (counted by the run going now, which resumed at 0 too).
  struct middle {
    std::int64_t end_s, first;
    const char* end;
    bool preempted;
    const char* why;
  };
  const middle cases[] = {
      {130, 0, "ok", false, "an ok end (a sweep task, a clean exit at the deadline) stops it"},
      {130, 0, "failed", true, "a preemption is not the loop's failure"},
      {130, 0, "preempted", false, "its batch supervisor saw the preemption; rank 0 may not have"},
      {130, -1, "failed", false, "102 never reached check(): 101's progress is unknown, and 102's"},
      {0, 0, "", false, "102's batch supervisor never wrote its end (killed with its node)"},
  };
  for (const auto& m : cases) {
    std::vector<run_event> ev;
    run(ev, "101", 0, 60, 0, "failed");
    run(ev, "102", 70, m.end_s, m.first, m.end, m.preempted);
    run(ev, "103", 140, 200, 0, "failed");
    EXPECT_EQ(count(ev, "104", 0), 1) << m.why;
  }
  std::vector<run_event> sweep;
  run(sweep, "101", 0, 100, 0, "failed");
  run(sweep, "102", 50, 150, 0, "failed");
  run(sweep, "103", 60, 200, 0, "failed");
  EXPECT_EQ(count(sweep, "104", 0), 1) << "a sweep's tasks run side by side: each is its own";
}

// Preemptions and time limits are no failure of the loop's: an array preempted, or cut
// by its time limit, three times before its first save (each run resumed at step 0 and
// ended failed) counts nothing, and the breaker does not end the fourth.
TEST(RunProgress, AnArrayPreemptedOrCutByItsLimitBeforeItsFirstSaveStillRuns) {
  // Three runs that resumed at `first` and failed, each with `notice` ("" none) before its end.
  auto runs = [](std::int64_t first, const std::string& notice) {
    std::vector<run_event> ev;
    for (int i = 0; i < 3; ++i) {
      const std::string job = std::to_string(101 + i);
      run(ev, job, 70 * i, 0, first, "");
      if (!notice.empty()) ev.push_back({(70 * i + 50) * 1000, job, "notice", -1, -1, notice});
      ev.push_back({(70 * i + 60) * 1000, job, "task_end", -1, -1, "failed", task_of(job), 0});
    }
    return ev;
  };
  array_run fourth = now("104");  // failing now, before its first check() too
  fourth.start_ms = 210000;
  EXPECT_EQ(count(runs(0, ""), "104", 0), 3) << "crashes: counted";
  EXPECT_EQ(runs_failing_before_check(array_runs(runs(-1, "")), fourth).runs, 4);
  for (const char* notice : {"preempted", "deadline"}) {
    EXPECT_EQ(count(runs(0, notice), "104", 0), 0) << notice;
    EXPECT_EQ(runs_failing_before_check(array_runs(runs(-1, notice)), fourth).runs, 1)
        << notice << ": only the run going now";
  }
}

// A requeued job keeps its id: each start is a run of its own, split at its task_end.
TEST(RunProgress, ARequeuedJobsStartsAreRunsOfTheirOwn) {
  std::vector<run_event> ev;
  run(ev, "7", 0, 60, 20, "failed", false, 0);
  run(ev, "7", 70, 130, 20, "failed", false, 1);
  run(ev, "7", 140, 200, 20, "failed", false, 2);
  ev.push_back({210000, "7", "first_step", 20, -1, ""});
  const auto runs = array_runs(ev);
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[3].end_ms, 0);
  EXPECT_EQ(runs_without_progress(runs, now("7", 20, 3)).runs, 3);
}

// Job ids start again when a cluster's state is reset: the file of array 100 then
// holds an older array's runs. Only runs earlier in this array (a lower index, or this
// job before its requeue) count, and lines without a place (older trainctl) stop it.
TEST(RunProgress, AnOlderArrayOfTheSameIdIsNotThisOnesPast) {
  std::vector<run_event> ev;
  for (int i = 1; i <= 4; ++i) run(ev, std::to_string(100 + i), i * 70, i * 70 + 60, 0, "failed");
  EXPECT_EQ(judge_breaker(array_runs(ev), now("101"), 3).what, breaker_verdict::none) << "the new array's task 1";
  for (int i = 1; i <= 3; ++i) run(ev, std::to_string(100 + i), 1000 + i * 70, 1000 + i * 70 + 60, 0, "failed");
  const auto v = judge_breaker(array_runs(ev), now("104"), 3);
  EXPECT_EQ(v.what, breaker_verdict::armed) << "its own tasks 1-3 did fail";
  EXPECT_EQ(v.count.runs, 3) << "the older array's task 4 is not before task 1";
  std::vector<run_event> single;  // job 7 ran 3 times before the reset; the new job 7 once
  for (int i = 0; i < 3; ++i) run(single, "7", i * 70, i * 70 + 60, 0, "failed", false, i);
  EXPECT_EQ(judge_breaker(array_runs(single), now("7", -1, 0), 1).what, breaker_verdict::none);
  std::vector<run_event> old;  // lines of a trainctl that wrote no place
  for (int i = 1; i <= 4; ++i) run(old, std::to_string(100 + i), i * 70, i * 70 + 60, 0, "failed");
  for (auto& e : old) e.restart = -1;
  EXPECT_EQ(judge_breaker(array_runs(old), now("105"), 1).what, breaker_verdict::none);
}

// The breaker ended a run: a person released the held requeue (or resubmitted), so the
// count starts again after it.
TEST(RunProgress, ARunTheBreakerEndedStopsTheCount) {
  std::vector<run_event> ev;
  run(ev, "7", 0, 60, 20, "failed", false, 0);
  run(ev, "7", 70, 130, 20, "failed", false, 1);
  run(ev, "7", 140, 200, 20, "no-progress", false, 2);
  run(ev, "7", 210, 260, 20, "failed", false, 3);
  EXPECT_EQ(runs_without_progress(array_runs(ev), now("7", 20, 4)).runs, 1);
}

// Judged at a run's start: three failed runs that resumed at step 0 arm the breaker
// for the fourth at step 0; two do not; a later resume is the current run's to show.
TEST(RunProgress, TheBreakerArmsAfterThresholdRunsWithoutProgress) {
  std::vector<run_event> ev;
  run(ev, "101", 0, 60, 0, "failed");
  run(ev, "102", 70, 130, 0, "failed");
  EXPECT_EQ(judge_breaker(array_runs(ev), now("103"), 3).what, breaker_verdict::none);
  run(ev, "103", 140, 200, 0, "failed");
  const auto v = judge_breaker(array_runs(ev), now("104"), 3);
  EXPECT_EQ(v.what, breaker_verdict::armed);
  EXPECT_EQ(v.at_step, 0);
  EXPECT_EQ(v.count.runs, 3);
  EXPECT_EQ(v.count.jobs, "101 102 103");
  EXPECT_EQ(judge_breaker(array_runs(ev), now("104"), 4).what, breaker_verdict::none);
  EXPECT_EQ(judge_breaker(array_runs(ev), now("104"), 0).what, breaker_verdict::none) << "0 turns it off";
  ev.push_back({210000, "104", "first_step", 0, -1, ""});  // its own events are passed over
  EXPECT_EQ(judge_breaker(array_runs(ev), now("104"), 3).what, breaker_verdict::armed);
}

// Arrays whose runs saved, were preempted, or run side by side never arm it.
TEST(RunProgress, TheBreakerNeverArmsOnAHealthyArray) {
  std::vector<run_event> resumed;  // each task resumed later than the one before
  for (int i = 0; i < 5; ++i) run(resumed, std::to_string(101 + i), i * 70, i * 70 + 60, i * 100, "failed");
  EXPECT_EQ(judge_breaker(array_runs(resumed), now("106"), 2).what, breaker_verdict::none);
  std::vector<run_event> preempted;  // preempted before any save
  for (int i = 0; i < 5; ++i) run(preempted, std::to_string(101 + i), i * 70, i * 70 + 60, 0, "preempted");
  EXPECT_EQ(judge_breaker(array_runs(preempted), now("106"), 1).what, breaker_verdict::none);
  std::vector<run_event> going;  // the newest task still runs beside this one
  for (int i = 0; i < 4; ++i) run(going, std::to_string(101 + i), i * 70, i * 70 + 60, 0, "failed");
  run(going, "105", 290, 0, 0, "");
  EXPECT_EQ(judge_breaker(array_runs(going), now("106"), 3).what, breaker_verdict::none);
}

// A task the breaker's cancel missed ends at once; the same job released ends nothing.
TEST(RunProgress, AfterTheBreakerALaterTaskEndsAtOnce) {
  std::vector<run_event> ev;
  for (int i = 0; i < 3; ++i) run(ev, std::to_string(101 + i), i * 70, i * 70 + 60, 0, "failed");
  run(ev, "104", 210, 220, 0, "no-progress");
  const auto v = judge_breaker(array_runs(ev), now("105"), 3);
  EXPECT_EQ(v.what, breaker_verdict::end_now);
  EXPECT_EQ(v.ended_job, "104");
  EXPECT_EQ(judge_breaker(array_runs(ev), now("104", -1, 1), 3).what, breaker_verdict::none)
      << "released after the hold";
}

TEST(RunProgress, TheTaskEndReasonOfAWaitStatus) {
  EXPECT_EQ(task_end_reason(0), "ok");
  EXPECT_EQ(task_end_reason(kNoProgressExit << 8), "no-progress");
  EXPECT_EQ(task_end_reason(1 << 8), "failed");
  EXPECT_EQ(task_end_reason(SIGKILL), "failed");
}

namespace {

// A node's first rank death in the newest run of `job` at `at_s` seconds: its last
// agreed step, how. Written before the run's task_end, as the step ends before the batch script.
// `oom`: a SIGKILL's cause as its supervisor saw it (1 the OOM killer, 0 from outside, -1 not said).
void death(std::vector<run_event>& ev, const std::string& job, std::int64_t at_s, std::int64_t step,
           const std::string& how, int oom = -1) {
  auto at = ev.end();
  for (auto e = ev.begin(); e != ev.end(); ++e)
    if (e->job == job && e->what == "task_end") at = e;
  run_event d{at_s * 1000, job, "death", step, -1, how};
  if (oom >= 0) d.figures.emplace_back("oom", oom);
  ev.insert(at, d);
}

// The run ending now that never reached check(), begun at `start_s`.
array_run ending(const std::string& job, std::int64_t start_s) {
  array_run r = now(job);
  r.start_ms = start_s * 1000;
  return r;
}

}  // namespace

// The commonest crash loop: every task dies before its first check() (a bad config, a
// checkpoint that fails to load). The runs count from the one ending now back.
TEST(RunProgress, RunsThatFailBeforeTheirFirstCheckCountInARow) {
  std::vector<run_event> ev;
  run(ev, "101", 0, 10, -1, "failed");
  run(ev, "102", 20, 30, -1, "failed");
  ev.push_back({40000, "103", "end", -1, -1, ""});  // the run ending now: no first step
  const auto runs = array_runs(ev);
  const auto c = runs_failing_before_check(runs, ending("103", 40));
  EXPECT_EQ(c.runs, 3);
  EXPECT_EQ(c.jobs, "101 102 103");
  array_run reached = ending("103", 40);
  reached.first_step = 0;
  EXPECT_EQ(runs_failing_before_check(runs, reached).runs, 0) << "a run that reached check() is the other rule's";
}

// What stops that count: a run that reached a step, a preempted run, an ok run, runs
// side by side (a sweep), another array's run.
TEST(RunProgress, OnlyFailedRunsInARowBeforeACheckCount) {
  std::vector<run_event> ev;
  run(ev, "101", 0, 10, -1, "failed");
  run(ev, "102", 20, 30, 0, "failed");  // reached step 0
  run(ev, "103", 40, 50, -1, "failed");
  EXPECT_EQ(runs_failing_before_check(array_runs(ev), ending("104", 60)).runs, 2);
  std::vector<run_event> preempted;
  run(preempted, "101", 0, 10, -1, "failed");
  run(preempted, "102", 20, 30, -1, "failed", true);
  EXPECT_EQ(runs_failing_before_check(array_runs(preempted), ending("103", 40)).runs, 1);
  std::vector<run_event> sweep;  // side by side
  run(sweep, "101", 0, 30, -1, "failed");
  run(sweep, "102", 0, 30, -1, "failed");
  EXPECT_EQ(runs_failing_before_check(array_runs(sweep), ending("103", 20)).runs, 1);
  std::vector<run_event> older;  // a single job of an older array with a lower id
  run(older, "7", 0, 10, -1, "failed");
  EXPECT_EQ(runs_failing_before_check(array_runs(older), ending("103", 20)).runs, 1);
}

// A requeued job's earlier runs, with its id, are runs of their own.
TEST(RunProgress, ARequeuedJobsEarlierRunsThatFailedBeforeACheckCount) {
  std::vector<run_event> ev;
  run(ev, "7", 0, 10, -1, "failed", false, 0);
  run(ev, "7", 20, 30, -1, "failed", false, 1);
  ev.push_back({40000, "7", "end", -1, -1, ""});
  array_run current = ending("7", 40);
  current.restart = 2;
  EXPECT_EQ(runs_failing_before_check(array_runs(ev), current).runs, 3);
}

// The earliest death of a run's nodes is its death; an OOM kill is named so.
TEST(RunProgress, RunsKilledByTheOomKillerAreNotCalledCrashes) {
  std::vector<run_event> ev;
  run(ev, "101", 0, 60, 0, "failed");
  death(ev, "101", 50, 19, "SIGTERM");  // a node whose ranks the launcher ended after
  death(ev, "101", 49, 19, "SIGKILL", 1);
  run(ev, "102", 70, 130, 0, "failed");
  death(ev, "102", 120, 19, "SIGKILL", 1);
  const auto runs = array_runs(ev);
  EXPECT_EQ(runs[0].death_how, "SIGKILL");
  EXPECT_EQ(runs[0].death_oom, 1);
  EXPECT_EQ(runs[0].death_step, 19);
  EXPECT_EQ(how_runs_ended(runs, "101 102"), "were killed by the OOM killer (out of memory)");
  EXPECT_EQ(runs_without_progress(runs, now("103", 0)).runs, 2) << "out of memory again is no progress";
  std::vector<run_event> mixed = ev;
  run(mixed, "103", 140, 200, 0, "failed");
  death(mixed, "103", 190, 19, "SIGSEGV");
  EXPECT_EQ(how_runs_ended(array_runs(mixed), "101 102 103"),
            "failed (2 of them killed by the OOM killer (out of memory))");
  std::vector<run_event> crashed;
  run(crashed, "101", 0, 60, 0, "failed");
  death(crashed, "101", 50, 19, "SIGABRT");
  EXPECT_EQ(how_runs_ended(array_runs(crashed), "101"), "failed");
  std::vector<run_event> old;  // lines of a trainctl that did not say the cause
  run(old, "101", 0, 60, 0, "failed");
  death(old, "101", 50, 19, "SIGKILL");
  EXPECT_EQ(how_runs_ended(array_runs(old), "101"),
            "were killed by SIGKILL (the OOM killer or a memory limit, as far as is known)");
}

// A SIGKILL that was not the OOM killer's came from outside the program (an admin's
// kill -9, a node health check): no failure of the program, so it stops either count.
TEST(RunProgress, AKillFromOutsideStopsTheCount) {
  std::vector<run_event> ev;
  run(ev, "101", 0, 60, 0, "failed");
  death(ev, "101", 50, 19, "SIGKILL", 1);
  run(ev, "102", 70, 130, 0, "failed");
  death(ev, "102", 120, 19, "SIGKILL", 0);
  run(ev, "103", 140, 200, 0, "failed");
  death(ev, "103", 190, 19, "SIGKILL", 1);
  const auto runs = array_runs(ev);
  EXPECT_TRUE(runs[1].killed_from_outside());
  EXPECT_FALSE(runs[0].killed_from_outside());
  EXPECT_EQ(runs_without_progress(runs, now("104", 0)).runs, 1) << "only 103: 102 was killed from outside";
  std::vector<run_event> before;  // runs that never reached check()
  run(before, "101", 0, 10, -1, "failed");
  death(before, "101", 5, -1, "SIGKILL", 0);
  run(before, "102", 20, 30, -1, "failed");
  death(before, "102", 25, -1, "SIGKILL", 1);
  EXPECT_EQ(runs_failing_before_check(array_runs(before), ending("103", 40)).runs, 2) << "102 and 103, not 101";
  array_run outside = ending("103", 40);
  outside.death_how = "SIGKILL";
  outside.death_oom = 0;
  EXPECT_EQ(runs_failing_before_check(array_runs(before), outside).runs, 0) << "the run ending now was killed";
}

// Forgiveness compares where the runs died, not where they resumed: a node failing at
// random times keeps its findings.
TEST(RunProgress, ForgivenessNeedsTheRunsToDieAtOneStep) {
  std::vector<run_event> ev;
  const std::int64_t died_at[] = {18, 33, 29};
  for (int i = 0; i < 3; ++i) {
    const std::string job = std::to_string(101 + i);
    run(ev, job, i * 70, i * 70 + 60, 0, "failed");
    death(ev, job, i * 70 + 50, died_at[i], "SIGSEGV");
  }
  std::string why;
  EXPECT_FALSE(died_at_one_step(array_runs(ev), "101 102 103", &why));
  EXPECT_EQ(why, "the runs died at different steps (18, 33, 29), as on a node failing at random times");
  std::vector<run_event> same;
  for (int i = 0; i < 3; ++i) {
    const std::string job = std::to_string(101 + i);
    run(same, job, i * 70, i * 70 + 60, 0, "failed");
    death(same, job, i * 70 + 50, 19, "SIGABRT");
  }
  EXPECT_TRUE(died_at_one_step(array_runs(same), "101 102 103", nullptr));
  std::vector<run_event> unknown = same;  // a fourth run whose nodes wrote no death
  run(unknown, "104", 210, 270, 0, "failed");
  EXPECT_FALSE(died_at_one_step(array_runs(unknown), "102 103 104", &why));
  EXPECT_EQ(why, "how the runs died is not known for each (19, 19, unknown)");
  std::vector<run_event> before;  // each died before any step
  for (int i = 0; i < 3; ++i) {
    const std::string job = std::to_string(101 + i);
    run(before, job, i * 70, i * 70 + 60, -1, "failed");
    death(before, job, i * 70 + 50, -1, "SIGABRT");
  }
  EXPECT_TRUE(died_at_one_step(array_runs(before), "101 102 103", nullptr));
}
