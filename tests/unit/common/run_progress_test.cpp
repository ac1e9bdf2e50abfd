#include "run_progress.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <string>
#include <vector>

using namespace trainctl;

namespace {

// The events of one run: its first step (-1: none), its end (reason; "" none), at
// [start, end] seconds, with a preemption notice or not.
void run(std::vector<run_event>& ev, const std::string& job, std::int64_t start_s, std::int64_t end_s,
         std::int64_t first, const std::string& end, bool preempted = false) {
  ev.push_back({start_s * 1000, job, "first_step", first, -1, ""});
  if (first < 0) ev.back().what = "end";  // a run whose loop never reached check(): some other event
  if (preempted) ev.push_back({start_s * 1000 + 1, job, "notice", -1, -1, "preempted"});
  if (!end.empty()) ev.push_back({end_s * 1000, job, "task_end", -1, -1, end});
}

int count(const std::vector<run_event>& ev, const std::string& current, std::int64_t first) {
  return runs_without_progress(array_runs(ev), current, first).runs;
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
  const auto c = runs_without_progress(array_runs(ev), "104", 0);
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

// A requeued job keeps its id: each start is a run of its own, split at its task_end.
TEST(RunProgress, ARequeuedJobsStartsAreRunsOfTheirOwn) {
  std::vector<run_event> ev;
  run(ev, "7", 0, 60, 20, "failed");
  run(ev, "7", 70, 130, 20, "no-progress");
  run(ev, "7", 140, 200, 20, "failed");
  ev.push_back({210000, "7", "first_step", 20, -1, ""});
  const auto runs = array_runs(ev);
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_EQ(runs[3].end_ms, 0);
  EXPECT_EQ(runs_without_progress(runs, "7", 20).runs, 3);
}

TEST(RunProgress, TheTaskEndReasonOfAWaitStatus) {
  EXPECT_EQ(task_end_reason(0), "ok");
  EXPECT_EQ(task_end_reason(kNoProgressExit << 8), "no-progress");
  EXPECT_EQ(task_end_reason(1 << 8), "failed");
  EXPECT_EQ(task_end_reason(SIGKILL), "failed");
}
