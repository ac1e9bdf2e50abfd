// trainctl report: the run events on disk, and SLURM's records plus the events into a
// breakdown whose parts add up to the allocation.
#include "report_views.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "checkpoint_advice.hpp"
#include "fixture.hpp"
#include "metrics_text.hpp"
#include "report_events.hpp"
#include "report_metrics.hpp"
#include "run_events.hpp"

using namespace trainctl;

using trainctl_test::ev;
using trainctl_test::kS;
using trainctl_test::kSec;
using trainctl_test::task;

TEST(RunEvents, LinesRoundTripAndJunkIsSkipped) {
  trainctl_test::temp_dir t;
  const std::string path = t / "runs/1234";
  std::string lines = format_run_event(ev(10, "1235", "first_step", 0)) +
                      format_run_event(ev(30, "1235", "save", 400, -1, "save-switch")) +
                      format_run_event(ev(33, "1235", "saved", -1, 3012)) +
                      format_run_event(ev(34, "1235", "notice", -1, -1, "$(reboot)"));
  EXPECT_EQ(append_run_events(path, lines), "");
  trainctl_test::append(path, "junk\n1 job=x save\n1700000000000 job=1 save step=-3\n");
  std::string why;
  const auto got = read_run_events(path, &why);
  EXPECT_EQ(why, "");
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[1].what, "save");
  EXPECT_EQ(got[1].step, 400);
  EXPECT_EQ(got[1].reason, "save-switch");
  EXPECT_EQ(got[2].took_ms, 3012);
  EXPECT_EQ(got[3].reason, "other") << "a reason that is not a word is never written as it came";
  struct stat st {};
  ASSERT_EQ(stat((t / "runs").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(run_events_path("12; rm -rf"), "");
}

// A file past the 8 MiB read: its newest runs are read (the breaker and the report need
// them), the oldest fall off, and the line cut at the front is not read as an event.
TEST(RunEvents, AFilePastTheLimitIsReadFromItsNewestLines) {
  trainctl_test::temp_dir t;
  const std::string path = t / "runs/77";
  std::string lines;
  for (int i = 0; i < 250'000; ++i)  // 9.5 MB
    lines += std::to_string(1'700'000'000'000LL + i) + " job=" + std::to_string(10'000 + i) +
             " first_step step=" + std::to_string(i) + "\n";
  ASSERT_EQ(append_run_events(path, lines), "");
  std::string why;
  const auto got = read_run_events(path, &why);
  EXPECT_EQ(why, "");
  ASSERT_GT(got.size(), 150'000u);  // 8 MiB of 48-byte lines
  EXPECT_LT(got.size(), 250'000u);
  EXPECT_EQ(got.back().step, 249'999);
  EXPECT_EQ(got.front().job, std::to_string(10'000 + got.front().step)) << "a whole line, not a cut one";
  EXPECT_EQ(got.front().ms, 1'700'000'000'000LL + got.front().step);
}

TEST(RunEvents, ASymlinkOrFifoIsNeitherReadNorWritten) {
  trainctl_test::temp_dir t;
  t.write("elsewhere", format_run_event(ev(1, "1", "first_step", 0)));
  ASSERT_EQ(symlink((t / "elsewhere").c_str(), (t / "link").c_str()), 0);
  std::string why;
  EXPECT_TRUE(read_run_events(t / "link", &why).empty());
  EXPECT_NE(why, "");
  EXPECT_NE(append_run_events(t / "link", "x\n"), "");
  ASSERT_EQ(mkfifo((t / "fifo").c_str(), 0600), 0);
  why.clear();
  EXPECT_TRUE(read_run_events(t / "fifo", &why).empty()) << "no hang on a FIFO";
  EXPECT_NE(why, "");
}

TEST(RunReport, SacctAndScontrolRecordsAreRead) {
  const auto s = parse_sacct_tasks(
      "1301|1300_1|COMPLETED|alice|2026-11-25T06:00:00|2026-11-25T06:00:00|2026-11-25T06:00:05|2026-11-25T06:02:05|2\n"
      "1300|1300_[3-4]|PENDING|alice|2026-11-25T06:00:00|2026-11-25T06:00:00|Unknown|Unknown|1\n"
      "garbage\n");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].name, "1300_1");
  EXPECT_EQ(s[0].nodes, 2);
  EXPECT_EQ(s[0].end_ms - s[0].start_ms, 120 * kSec);
  EXPECT_EQ(s[1].start_ms, 0);
  const auto c = parse_scontrol_tasks(
      "JobId=1302 ArrayJobId=1300 ArrayTaskId=2 JobName=t UserId=alice(1001) JobState=CANCELLED "
      "SubmitTime=2026-11-25T06:00:00 EligibleTime=2026-11-25T06:00:00 StartTime=2026-11-25T06:02:10 "
      "EndTime=2026-11-25T06:03:10 NumNodes=2\n");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].name, "1300_2");
  EXPECT_EQ(c[0].user, "alice");
  EXPECT_EQ(c[0].end_ms - c[0].start_ms, 60 * kSec);
}

namespace {
// Task 1 of array 1300 (job 1301, 2 nodes, 56 s): start-up 10 s, a save-switch save of
// 3 s at +30 s, the deadline's save of 4 s at +50 s.
std::vector<run_event> task_one_events() {
  return {
      ev(10, "1301", "first_step", 0),
      ev(30, "1301", "save", 400, -1, "save-switch"),
      ev(33, "1301", "saved", -1, 3000),
      ev(40, "1301", "notice", -1, -1, "deadline"),
      ev(50, "1301", "exit", 740, -1, "deadline"),
      ev(54, "1301", "saved", -1, 4000),
  };
}
}  // namespace

TEST(RunReport, TheBreakdownAddsUpToTheAllocationAndKeepsOnlySavedWork) {
  // Task 1 as task_one_events, rank 0 ends at +54.1 s, SLURM at +56 s.
  // Task 2 (1 node, +60 .. +90 s): a save begun at +80 s never finishes: all lost.
  std::vector<run_event> events = task_one_events();
  events.push_back(ev(65, "1302", "first_step", 741));
  events.push_back(ev(80, "1302", "save", 1000, -1, "save-switch"));
  events.push_back(ev(10, "9999", "first_step", 0));  // another job's
  events.push_back(ev(54, "1301", "end", 740));
  events.back().ms += 100;
  const run_report r = build_run_report("1300",
                                        {task("1303", "1300_3", -1, -1, 1, "PENDING"),
                                         task("1302", "1300_2", 60, 90, 1), task("1301", "1300_1", 0, 56, 2)},
                                        events, kS + 1000 * kSec);
  ASSERT_EQ(r.tasks.size(), 3u);
  const task_report& t1 = r.tasks[0];
  EXPECT_EQ(t1.task.name, "1300_1");
  EXPECT_DOUBLE_EQ(t1.startup_s, 10);
  EXPECT_DOUBLE_EQ(t1.kept_s, 37);  // 10..30 and 33..50
  EXPECT_DOUBLE_EQ(t1.saves_s, 7);
  EXPECT_NEAR(t1.lost_s, 0.1, 1e-9);
  EXPECT_NEAR(t1.end_s, 1.9, 1e-9);
  EXPECT_EQ(t1.exit_reason, "deadline");
  EXPECT_EQ(t1.kept_step, 740);
  EXPECT_EQ(t1.notices.size(), 1u);
  const task_report& t2 = r.tasks[1];
  EXPECT_DOUBLE_EQ(t2.startup_s, 5);
  EXPECT_DOUBLE_EQ(t2.kept_s, 0);
  EXPECT_DOUBLE_EQ(t2.lost_s, 25) << "15 s of training and the 10 s of a save that never finished";
  EXPECT_DOUBLE_EQ(t2.queue_s, 4) << "from task 1's end, not from the array's submission";
  EXPECT_EQ(r.tasks[2].task.start_ms, 0) << "the pending task is listed last";
  EXPECT_DOUBLE_EQ(r.allocated, 2 * 56 + 30);
  EXPECT_DOUBLE_EQ(r.productive, 2 * 37);
  EXPECT_NEAR(r.startup + r.productive + r.saves + r.lost + r.end, r.allocated, 1e-6);
  EXPECT_NEAR(r.goodput(), 74.0 / 142.0, 1e-9);
  const std::string text = run_report_text(r);
  EXPECT_NE(text.find("goodput     52.1%"), std::string::npos) << text;
  EXPECT_NE(text.find("save at step 1000 (save-switch, never finished)"), std::string::npos) << text;
  const std::string svg = run_report_svg(r);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("goodput 52.1%"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_NE(run_report_json(r).find("\"goodput\":0.52"), std::string::npos);
}

// Rank 3's part of the deadline's save failed: rank 0 finished it, but the supervisor
// of rank 3's node said it was not committed, so resume_path goes back to step 400 and
// the training after that save, and this one, are lost.
TEST(RunReport, ASaveARankDidNotCommitKeepsNothingAfterTheLastCommittedOne) {
  std::vector<run_event> events = {ev(10, "1301", "first_step", 0),   ev(30, "1301", "save", 400, -1, "save-switch"),
                                   ev(33, "1301", "saved", -1, 3000), ev(50, "1301", "exit", 740, -1, "deadline"),
                                   ev(54, "1301", "saved", -1, 4000), ev(54, "1301", "end", 740),
                                   ev(55, "1301", "uncommitted", 740)};
  events.back().figures = {{"rank", 3}, {"last", 400}};
  const run_report r = build_run_report("1301", {task("1301", "1301", 0, 56, 2)}, events, kS + 100 * kSec);
  const task_report& t = r.tasks[0];
  EXPECT_EQ(t.kept_step, 400);
  EXPECT_DOUBLE_EQ(t.kept_s, 20);  // 10..30
  EXPECT_DOUBLE_EQ(t.saves_s, 3);
  EXPECT_DOUBLE_EQ(t.lost_s, 21) << "33..50 of training and the 4 s of the save rank 3 did not commit";
  EXPECT_NEAR(r.startup + r.productive + r.saves + r.lost + r.end, r.allocated, 1e-6);
  const std::string text = run_report_text(r);
  EXPECT_NE(text.find("save at step 740 (deadline, not committed by rank 3);"), std::string::npos) << text;
  EXPECT_NE(text.find("340 steps after step 400 never saved"), std::string::npos) << text;
  EXPECT_NE(run_report_json(r).find("\"uncommitted_ranks\":[3]"), std::string::npos);
}

TEST(RunReport, ATaskWithoutEventsCountsNothingAsKept) {
  const run_report r = build_run_report("77", {task("77", "77", 0, 100, 4)}, {}, kS + 200 * kSec);
  EXPECT_DOUBLE_EQ(r.allocated, 400);
  EXPECT_DOUBLE_EQ(r.productive, 0);
  EXPECT_NE(run_report_text(r).find("no trainctl events"), std::string::npos);
}

TEST(RunReport, ARunningTaskIsMeasuredUpToNow) {
  const run_report r =
      build_run_report("88", {task("88", "88", 0, 3600, 1, "RUNNING")}, {ev(5, "88", "first_step", 0)}, kS + 65 * kSec);
  ASSERT_EQ(r.tasks.size(), 1u);
  EXPECT_TRUE(r.tasks[0].running);
  EXPECT_DOUBLE_EQ(r.allocated, 65);
  EXPECT_DOUBLE_EQ(r.lost, 0) << "a running task has lost nothing yet";
  EXPECT_DOUBLE_EQ(r.unsaved, 60) << "its training since the first step: not saved yet";
  EXPECT_NEAR(r.startup + r.productive + r.saves + r.lost + r.unsaved + r.end, r.allocated, 1e-6);
}

TEST(RunReport, ARunningTasksWorkSinceItsLastSaveIsNotSavedYetNotLost) {
  // Running since +0 s, now +65 s: first step +5 s, a save from +20 to +22 s, training
  // since, and a save begun at +60 s still going on.
  const std::vector<run_event> events = {ev(5, "88", "first_step", 0), ev(20, "88", "save", 300, -1, "save-switch"),
                                         ev(22, "88", "saved", -1, 2000),
                                         ev(60, "88", "save", 1100, -1, "save-switch")};
  const run_report r = build_run_report("88", {task("88", "88", 0, 3600, 2, "RUNNING")}, events, kS + 65 * kSec);
  const task_report& t = r.tasks.at(0);
  EXPECT_DOUBLE_EQ(t.kept_s, 15);
  EXPECT_DOUBLE_EQ(t.saves_s, 2);
  EXPECT_DOUBLE_EQ(t.lost_s, 0);
  EXPECT_DOUBLE_EQ(t.unsaved_s, 43) << "38 s of training and the 5 s of the save going on";
  EXPECT_DOUBLE_EQ(r.unsaved, 86);
  const std::string text = run_report_text(r);
  EXPECT_NE(text.find("save at step 1100 (save-switch, going on)"), std::string::npos) << text;
  EXPECT_NE(text.find("43.0s of training since its last save, not saved yet (running)"), std::string::npos) << text;
  EXPECT_NE(text.find("and 66.2% training of the running tasks, not saved yet"), std::string::npos) << text;
  EXPECT_EQ(text.find("never saved"), std::string::npos) << text;
  EXPECT_NE(run_report_svg(r).find("training (not saved yet)"), std::string::npos);
  EXPECT_NE(run_report_json(r).find("\"unsaved_s\":43"), std::string::npos) << run_report_json(r);
}

TEST(RunReport, EachRunOfARequeuedJobGetsItsOwnEvents) {
  // sacct -D: the preempted run (0 .. 40 s, requeued) and the run after it (50 .. 120 s).
  task_record first = task("900", "900", 0, 40, 2, "REQUEUED");
  task_record second = task("900", "900", 50, 120, 2);
  const run_report r = build_run_report(
      "900", {second, first},
      {ev(5, "900", "first_step", 0), ev(30, "900", "notice", -1, -1, "preempted"),
       ev(31, "900", "exit", 500, -1, "preempted"), ev(33, "900", "saved", -1, 2000), ev(33, "900", "end", 500),
       ev(56, "900", "first_step", 501), ev(110, "900", "exit", 1500, -1, "deadline"),
       ev(112, "900", "saved", -1, 2000), ev(112, "900", "end", 1500)},
      kS + 200 * kSec);
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_EQ(r.tasks[0].task.state, "REQUEUED");
  EXPECT_EQ(r.tasks[0].exit_reason, "preempted");
  EXPECT_EQ(r.tasks[0].saves.size(), 1u) << "not the next run's save";
  EXPECT_DOUBLE_EQ(r.tasks[0].kept_s, 26);
  EXPECT_EQ(r.tasks[1].first_step, 501);
  EXPECT_EQ(r.tasks[1].exit_reason, "deadline");
  EXPECT_DOUBLE_EQ(r.tasks[1].kept_s, 54);
  EXPECT_DOUBLE_EQ(r.tasks[1].queue_s, 10) << "from the first run's end to the second's start";
}

// A requeued run that started 4 s after the preempted one ended (the e2e test's, once
// its loop started within a second): the preempted run's save and exit, 0.4 s before its
// End, are its own, not the next run's.
TEST(RunReport, ARunRequeuedSecondsLaterKeepsTheEventsBeforeIt) {
  task_record first = task("910", "910", 0, 6, 2, "REQUEUED");
  task_record second = task("910", "910", 10, 30, 2);
  std::vector<run_event> events{ev(1, "910", "first_step", 0),
                                ev(5, "910", "notice", -1, -1, "preempted"),
                                ev(5, "910", "exit", 80, -1, "preempted"),
                                ev(5, "910", "saved", -1, 10),
                                ev(5, "910", "end", 80),
                                ev(11, "910", "first_step", 81)};
  for (auto& e : events)
    if (e.ms < kS + 6 * kSec) e.ms += 600;  // at 5.6 s
  const run_report r = build_run_report("910", {first, second}, events, kS + 100 * kSec);
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_EQ(r.tasks[0].exit_reason, "preempted");
  EXPECT_EQ(r.tasks[0].exit_step, 80);
  EXPECT_EQ(r.tasks[1].first_step, 81);
  EXPECT_EQ(r.tasks[1].exit_reason, "") << "the preempted run's exit went to the next run";
}

TEST(RunReport, ALoopThatFinishedKeepsItsLastWorkOnlyWhenTheTaskCompleted) {
  const std::vector<run_event> events = {ev(5, "70", "first_step", 0), ev(95, "70", "end", 1799)};
  const run_report done = build_run_report("70", {task("70", "70", 0, 100, 1)}, events, kS + 200 * kSec);
  EXPECT_DOUBLE_EQ(done.productive, 90);
  EXPECT_NE(run_report_text(done).find("finished (its own last save assumed)"), std::string::npos);
  const run_report failed = build_run_report("70", {task("70", "70", 0, 100, 1, "FAILED")}, events, kS + 200 * kSec);
  EXPECT_DOUBLE_EQ(failed.productive, 0);
  EXPECT_DOUBLE_EQ(failed.lost, 90);
}

TEST(RunReport, SlurmctldSuppliesTheRunsAndEndsSlurmdbdHasNotRecordedYet) {
  std::vector<task_record> recorded = {task("11", "10_1", 0, 30, 2), task("12", "10_2", 31, -1, 2, "RUNNING")};
  const std::vector<task_record> live = {task("11", "10_1", 0, 30, 2), task("12", "10_2", 31, 40, 2),
                                         task("13", "10_3", 41, 42, 2), task("10", "10_[4-5]", -1, -1, 2, "PENDING")};
  EXPECT_EQ(merge_live_tasks(recorded, live), 3u);
  ASSERT_EQ(recorded.size(), 4u);
  EXPECT_EQ(recorded[1].state, "COMPLETED");
  EXPECT_EQ(recorded[1].end_ms - recorded[1].start_ms, 9 * kSec);
  EXPECT_EQ(recorded[2].name, "10_3");
  EXPECT_EQ(recorded[3].start_ms, 0) << "the pending rest, shown as pending";
  EXPECT_EQ(merge_live_tasks(recorded, live), 0u) << "nothing twice";
}

TEST(RunReport, AHangsStallIsCountedApartFromOtherLostWork) {
  // Saved at +20 s; the ranks stall at +40 s; the supervisor's hang notice at +70 s
  // (hang timeout 30 s) and the step is ended: End at +75 s, no end from rank 0.
  const run_report r = build_run_report("60", {task("60", "60", 0, 75, 2, "FAILED")},
                                        {ev(5, "60", "first_step", 0), ev(20, "60", "save", 300, -1, "save-switch"),
                                         ev(22, "60", "saved", -1, 2000), ev(70, "60", "notice", -1, 30000, "hang")},
                                        kS + 100 * kSec);
  const task_report& t = r.tasks[0];
  EXPECT_DOUBLE_EQ(t.kept_s, 15);
  EXPECT_DOUBLE_EQ(t.saves_s, 2);
  EXPECT_DOUBLE_EQ(t.lost_s, 18) << "22 .. 40 s: trained, never saved";
  EXPECT_DOUBLE_EQ(t.hung_s, 35) << "40 .. 75 s: from the stall to the end";
  EXPECT_NEAR(r.startup + r.productive + r.saves + r.lost + r.hung + r.end, r.allocated, 1e-6);
  EXPECT_NE(run_report_text(r).find("hangs 46.7%"), std::string::npos) << run_report_text(r);
  EXPECT_NE(run_report_svg(r).find("#6a1b9a"), std::string::npos);
}

TEST(RunReport, AHangIsToldAsTheFirstNodeSummedItUp) {
  // Both nodes note the hang, the second first and without a summary (its own ranks' is
  // not the job's). The first's is long (a flight recorder's verdict) and comes through
  // the run events whole.
  const run_event second = ev(70, "64", "notice", -1, 30000, "hang");
  run_event first = second;
  first.text =
      "3 of 4 ranks in all_reduce (distributed_c10d.py:1541); elsewhere: rank 2 on n2 in load (data.py:40); " +
      std::string("flight recorder: ranks 0,1,3 wait in all_reduce #1234 (float32 x 4194304, issued at ") +
      "train_step (train.py:88)); rank 2's last collective is #1233: it never entered #1234 (its stack: load " +
      "(data.py:40))";
  std::vector<run_event> events;
  for (const auto& e : {ev(5, "64", "first_step", 0), second, first})
    events.push_back(parse_run_events(format_run_event(e)).at(0));  // through the file's format
  const run_report r = build_run_report("64", {task("64", "64", 0, 75, 2, "FAILED")}, events, kS + 100 * kSec);
  EXPECT_EQ(r.tasks[0].hang.summary, first.text);
  EXPECT_NE(run_report_text(r).find("the hang: 3 of 4 ranks in all_reduce"), std::string::npos) << run_report_text(r);
}

TEST(RunReport, AHangEndedBySaveExitKeepsTheStepsBeforeTheStallAndCountsTheStallAsHung) {
  // --hang-action=save-exit: the ranks stall at +40 s, the hang notice at +55 s (10 s
  // timeout, 5 s of stacks); the stalled rank comes back at +70 s, and the ranks agree
  // to save (2 s) and exit. The save keeps the steps up to the stall, not the stall.
  const run_report r = build_run_report(
      "61", {task("61", "61", 0, 75, 2)},
      {ev(5, "61", "first_step", 0), ev(55, "61", "notice", -1, 15000, "hang"), ev(70, "61", "exit", 700, -1, "hang"),
       ev(72, "61", "saved", -1, 2000), ev(73, "61", "end", 700)},
      kS + 100 * kSec);
  const task_report& t = r.tasks[0];
  EXPECT_DOUBLE_EQ(t.kept_s, 35) << "5 .. 40 s";
  EXPECT_DOUBLE_EQ(t.hung_s, 31) << "40 .. 70 s, the stall, and 72 .. 73 s after the save";
  EXPECT_DOUBLE_EQ(t.lost_s, 0);
  EXPECT_NEAR(r.startup + r.productive + r.saves + r.lost + r.hung + r.end, r.allocated, 1e-6);
  EXPECT_NE(run_report_text(r).find("(from the stall to the save)"), std::string::npos) << run_report_text(r);
  EXPECT_EQ(advise_checkpoints(r).interruptions, 0) << "it saved at its exit: no work to redo";
}

TEST(RunReport, AHangTheLoopSavedAfterCostsNothingPastThatSave) {
  // --hang-action=alert: the ranks stall at +20 s, the notice at +25 s; the stall ends
  // and the loop saves at +40 s (2 s). The training after that save is the run's: lost
  // when the task fails at +60 s, unsaved while it runs, never the hang's.
  const std::vector<run_event> events = {ev(5, "63", "first_step", 0), ev(25, "63", "notice", -1, 5000, "hang"),
                                         ev(40, "63", "save", 400, -1, "save-switch"), ev(42, "63", "saved", -1, 2000)};
  const run_report failed = build_run_report("63", {task("63", "63", 0, 60, 1, "FAILED")}, events, kS + 100 * kSec);
  EXPECT_DOUBLE_EQ(failed.tasks[0].kept_s, 35) << "5 .. 40 s, the stall in it: the save kept it";
  EXPECT_DOUBLE_EQ(failed.tasks[0].hung_s, 0);
  EXPECT_DOUBLE_EQ(failed.tasks[0].lost_s, 18) << "42 .. 60 s";
  const run_report running = build_run_report("63", {task("63", "63", 0, -1, 1, "RUNNING")}, events, kS + 50 * kSec);
  EXPECT_DOUBLE_EQ(running.tasks[0].hung_s, 0);
  EXPECT_DOUBLE_EQ(running.tasks[0].unsaved_s, 8) << "42 .. 50 s";
  EXPECT_EQ(running.tasks[0].notices.size(), 1u) << "the hang is still told";
}

TEST(RunReport, TheLoopsMarkedRestoreIsCountedApartFromTheStartUp) {
  // Start-up 12 s to the first step, 5 s of it the restore the loop marked; a restore
  // after the first step (a rollback mid-run) is training, not start-up.
  const run_report r = build_run_report(
      "62", {task("62", "62", 0, 40, 2)},
      {ev(11, "62", "restore", -1, 5000), ev(12, "62", "first_step", 100), ev(20, "62", "restore", 300, 3000),
       ev(30, "62", "exit", 500, -1, "deadline"), ev(32, "62", "saved", -1, 2000), ev(33, "62", "end", 500)},
      kS + 100 * kSec);
  const task_report& t = r.tasks[0];
  EXPECT_DOUBLE_EQ(t.restore_s, 5);
  EXPECT_DOUBLE_EQ(t.startup_s, 7);
  EXPECT_DOUBLE_EQ(r.restore, 10) << "node-seconds";
  EXPECT_NEAR(r.startup + r.restore + r.productive + r.saves + r.lost + r.hung + r.end, r.allocated, 1e-6);
  const std::string text = run_report_text(r);
  EXPECT_NE(text.find("restore 5.0s (in its start-up)"), std::string::npos) << text;
  EXPECT_NE(text.find("restore 12.5%"), std::string::npos) << text;
  EXPECT_NE(run_report_json(r).find("\"restore_s\":5.0"), std::string::npos) << run_report_json(r);
  EXPECT_NE(run_report_svg(r).find(": restore</title>"), std::string::npos);
}

// Three runs that crash after two saves each (600 s of training apart, 30 s each), and one
// that saves at its deadline exit: 3 interruptions in 5,491 s of training, a save cost
// of 30 s, so Daly's interval is sqrt(2 x 30 x 5491 / 3) - 30 = 301.4 s.
TEST(RunReport, TheCheckpointIntervalFollowsYoungAndDalyFromTheRunsOwnNumbers) {
  std::vector<task_record> tasks;
  std::vector<run_event> events;
  for (int k = 0; k < 4; ++k) {
    const std::string id = std::to_string(2001 + k);
    const std::int64_t at = k * 10000;
    const bool last = k == 3;
    tasks.push_back(
        task(id, "2000_" + std::to_string(k + 1), at, at + (last ? 1040 : 1500), 2, last ? "COMPLETED" : "FAILED"));
    events.push_back(ev(at + 10, id, "first_step", 0));
    events.push_back(ev(at + 610, id, "save", 100, -1, "save-switch"));
    events.push_back(ev(at + 640, id, "saved", -1, 30000));
    if (last) {
      events.push_back(ev(at + 1000, id, "exit", 160, -1, "deadline"));
      events.push_back(ev(at + 1030, id, "saved", -1, 30000));
      events.push_back(ev(at + 1031, id, "end", 160));
    } else {
      events.push_back(ev(at + 1240, id, "save", 200, -1, "save-switch"));
      events.push_back(ev(at + 1270, id, "saved", -1, 30000));
    }
  }
  const run_report r = build_run_report("2000", tasks, events, kS + 100000 * kSec);
  const checkpoint_advice a = advise_checkpoints(r);
  EXPECT_EQ(a.saves, 8);
  EXPECT_DOUBLE_EQ(a.save_s, 30);
  EXPECT_EQ(a.interruptions, 3) << "the deadline exit saved: nothing lost";
  EXPECT_DOUBLE_EQ(a.training_s, 3 * 1490 + 1021);
  EXPECT_DOUBLE_EQ(a.between_s, 600);
  EXPECT_NEAR(a.advised_s, std::sqrt(2 * 30 * 5491.0 / 3) - 30, 1e-9);
  EXPECT_EQ(a.too_little, "");
  const std::string text = run_report_text(r);
  EXPECT_NE(text.find("save every 5m01s (Young/Daly"), std::string::npos) << text;
  EXPECT_NE(text.find("lost per interruption 5m00s (0.17 node-hours) now, 2m30s (0.08) advised"), std::string::npos)
      << text;
  EXPECT_NE(run_report_json(r).find("\"advised_s\":301.3"), std::string::npos) << run_report_json(r);

  // One crash is not a rate: no advice, and what is missing.
  tasks.resize(1);
  const checkpoint_advice one = advise_checkpoints(build_run_report("2000", tasks, events, kS + 100000 * kSec));
  EXPECT_EQ(one.advised_s, 0);
  EXPECT_EQ(
      one.too_little,
      "1 interruption that lost work in 24m50s of training; at least 3 are needed to estimate how often they come");

  // Rank 0's end says how long after its last agreement it came (a crash's teardown, an
  // exit's save): training ends at that agreement, +1300 s here, not at +1500.
  events.push_back(ev(1400, "2001", "end", 190, 100000));
  EXPECT_DOUBLE_EQ(advise_checkpoints(build_run_report("2000", tasks, events, kS + 100000 * kSec)).training_s, 1290);
}

// SLURM's EndTime has whole seconds: a run that ended 540 ms into its last second has
// its end event (and its last check()) after EndTime. Its training runs to that check,
// not to the truncated EndTime (seen when a loop's crash ended its task within 100 ms).
TEST(RunReport, EventsInTheSecondSlurmTruncatedStillCount) {
  std::vector<task_record> tasks{task("3001", "3000_1", 0, 8, 1, "FAILED")};
  std::vector<run_event> events{ev(0, "3001", "first_step", 0)};
  run_event end = ev(8, "3001", "end", 59, 18);
  end.ms += 542;  // 8.542 s after the start; its last check() 18 ms before
  events.push_back(end);
  const run_report r = build_run_report("3000", tasks, events, kS + 100 * kSec);
  ASSERT_EQ(r.tasks.size(), 1U);
  EXPECT_EQ(r.tasks[0].last_agreement_ms, kS + 8524);
  EXPECT_DOUBLE_EQ(advise_checkpoints(r).training_s, 8.524);
  EXPECT_DOUBLE_EQ(r.tasks[0].end_s, 0) << "no negative time after the loop's end";
}

// The straggler's price (ByteDance's what-if: every step at the median rank's work):
// 2 nodes of 2 ranks, 1,000 steps timed; rank 3 works 150 ms a step, the others 50, 52
// and 54 ms, so the median rank 53 ms. Each step waited 97 ms more than it would have,
// on both nodes: 97 s of the task's wall time, 194 node-s. Node 1's supervisor wrote
// twice (the role taken over): the line with more steps counts.
TEST(RunReport, AStragglersPriceIsTheSlowestAgainstTheMedianRankTimesTheSteps) {
  auto compute = [](std::int64_t at_s, std::int64_t steps, std::vector<std::pair<std::int64_t, std::int64_t>> works) {
    run_event e = ev(at_s, "1501", "compute");
    e.figures = {{"steps", steps}, {"slowest_us", 150'000}, {"marked", 1}};
    e.works = std::move(works);
    return e;
  };
  run_event times = ev(200, "1501", "step_times");
  times.figures = {
      {"steps", 1000}, {"median_us", 150'000}, {"mad_us", 2'000}, {"outliers", 4}, {"excess_us", 6'000'000}};
  std::vector<run_event> events = {ev(10, "1501", "first_step", 0), compute(200, 1000, {{0, 50'000}, {1, 52'000}}),
                                   compute(199, 500, {{2, 60'000}, {3, 140'000}}),
                                   compute(200, 1000, {{2, 54'000}, {3, 150'000}}), times};
  // Round trip through the file format first: the report reads what the supervisor wrote.
  std::string lines;
  for (const auto& e : events) lines += format_run_event(e);
  events = parse_run_events(lines);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_EQ(events[1].works.size(), 2u);
  const run_report r = build_run_report("1501", {task("1501", "1501", 0, 210, 2)}, events, kS + 1000 * kSec);
  const straggler_price& p = r.tasks[0].straggler;
  EXPECT_EQ(p.ranks, 4);
  EXPECT_EQ(p.steps, 1000);
  EXPECT_EQ(p.slowest_rank, 3);
  EXPECT_NEAR(p.median_s, 0.053, 1e-9);
  EXPECT_NEAR(p.wall_s, 97, 1e-6);
  EXPECT_TRUE(p.marked);
  EXPECT_NEAR(r.straggler, 194, 1e-6);
  EXPECT_NEAR(r.slow_steps, 12, 1e-6) << "6 s beyond the median, on 2 nodes";
  const std::string text = run_report_text(r);
  EXPECT_NE(text.find("straggler: rank 3, 150.0 ms per step against the median rank's 53.0 ms, cost 194.0 node-s "
                      "over 1000 steps;"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("4 slow steps (over 165.0 ms, the median 150.0 ms + 3 MAD): 12.0 node-s beyond the median"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("stragglers  0.05 node-hours"), std::string::npos) << text;
  const std::string json = run_report_json(r);
  EXPECT_NE(json.find("\"straggler_node_s\":194"), std::string::npos) << json;
  EXPECT_NE(json.find("\"slowest_rank\":3"), std::string::npos) << json;
  EXPECT_NE(run_report_svg(r).find("straggler rank 3: 194 node-s"), std::string::npos);
}

// One rank measured, or a loop that marks no compute: no price, or a floor said as one.
TEST(RunReport, AStragglersPriceNeedsTwoRanksAndIsAFloorWithoutMarkedCompute) {
  run_event one = ev(100, "1601", "compute");
  one.figures = {{"steps", 100}, {"slowest_us", 80'000}, {"marked", 1}};
  one.works = {{0, 80'000}};
  run_report r = build_run_report("1601", {task("1601", "1601", 0, 110, 1)}, {ev(5, "1601", "first_step", 0), one},
                                  kS + 1000 * kSec);
  EXPECT_FALSE(r.tasks[0].straggler.priced());
  EXPECT_EQ(run_report_text(r).find("stragglers"), std::string::npos);
  EXPECT_NE(run_report_json(r).find("\"straggler_node_s\":null"), std::string::npos);
  one.figures = {{"steps", 100}, {"slowest_us", 80'000}, {"marked", 0}};
  one.works = {{0, 80'000}, {1, 40'000}, {2, 41'000}};
  r = build_run_report("1601", {task("1601", "1601", 0, 110, 1)}, {ev(5, "1601", "first_step", 0), one},
                       kS + 1000 * kSec);
  EXPECT_NEAR(r.tasks[0].straggler.wall_s, 3.9, 1e-9);
  EXPECT_NE(run_report_text(r).find("cost at least 3.9 node-s"), std::string::npos) << run_report_text(r);
}

TEST(RunReport, TheTasksTheKillSwitchHeldAreNamedWithHowToGoOn) {
  std::vector<run_event> events = {ev(10, "1401", "first_step", 0), ev(40, "1401", "exit", 300, -1, "kill-switch"),
                                   ev(41, "1401", "saved", -1, 1000), ev(43, "1401", "held")};
  events.back().reason = "kill-switch";
  events.back().figures.emplace_back("tasks", 3);
  const run_report r = build_run_report(
      "1400", {task("1402", "1400_2", -1, -1, 1, "PENDING"), task("1401", "1400_1", 0, 44, 2)}, events, kS + 50 * kSec);
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_EQ(r.tasks[0].held_tasks, 3);
  EXPECT_EQ(r.tasks[1].held_tasks, 0);
  const std::string text = run_report_text(r);
  EXPECT_NE(text.find("the kill switch held the array's 3 pending tasks (rm the switch and scontrol release them to "
                      "go on)"),
            std::string::npos)
      << text;
}

// A damaged events file (a torn write, a disk error) can hold figures no run has: more
// slow-step time or straggler time than the task lasted. They are named, never summed.
TEST(RunReport, FiguresLongerThanTheTaskAreNamedAsDamagedAndNotCounted) {
  run_event times = ev(100, "1701", "step_times");
  times.figures = {
      {"steps", 1000}, {"median_us", 150'000}, {"mad_us", 2'000}, {"outliers", 4}, {"excess_us", 1'000'000'000'000}};
  run_event compute = ev(100, "1701", "compute");
  compute.figures = {{"steps", 1000}, {"slowest_us", 900'000'000}, {"marked", 1}};
  compute.works = {{0, 50'000}, {1, 900'000'000}};
  const run_report r = build_run_report("1701", {task("1701", "1701", 0, 110, 1)},
                                        {ev(5, "1701", "first_step", 0), compute, times}, kS + 1000 * kSec);
  EXPECT_EQ(r.slow_steps, 0);
  EXPECT_EQ(r.straggler, 0);
  ASSERT_EQ(r.tasks[0].damaged.size(), 2u);
  const std::string text = run_report_text(r);
  EXPECT_NE(text.find("damaged event line not counted: step_times ("), std::string::npos) << text;
  EXPECT_NE(text.find("damaged event line not counted: compute ("), std::string::npos) << text;
  EXPECT_EQ(text.find("slow steps (over"), std::string::npos) << text;
  EXPECT_EQ(text.find("stragglers "), std::string::npos) << text;
  EXPECT_NE(run_report_json(r).find("\"damaged\":[\"step_times ("), std::string::npos) << run_report_json(r);
}

// Without accounting scontrol knows a requeued job's newest run only: the preempted run
// before it comes back from trainctl's events, with its steps and its save.
TEST(RunReport, WithoutAccountingARequeuedJobsEarlierRunComesFromItsEvents) {
  task_record now = task("920", "920", 50, 120, 2);
  std::vector<run_event> events = {ev(5, "920", "first_step", 0),
                                   ev(30, "920", "notice", -1, -1, "preempted"),
                                   ev(31, "920", "exit", 500, -1, "preempted"),
                                   ev(33, "920", "saved", -1, 2000),
                                   ev(33, "920", "end", 500),
                                   ev(34, "920", "task_end", -1, -1, "preempted"),
                                   ev(56, "920", "first_step", 501)};
  events[5].restart = 0;  // the task_end of the run's first start (not an array: task -1)
  const run_report r = build_run_report("920", {now}, events, kS + 200 * kSec);
  ASSERT_EQ(r.tasks.size(), 2u);
  EXPECT_TRUE(r.tasks[0].task.from_events);
  EXPECT_EQ(r.tasks[0].task.state, "REQUEUED");
  EXPECT_EQ(r.tasks[0].exit_reason, "preempted");
  EXPECT_EQ(r.tasks[0].saves.size(), 1u);
  EXPECT_DOUBLE_EQ(r.tasks[0].kept_s, 26);
  EXPECT_EQ(r.tasks[1].first_step, 501);
  EXPECT_FALSE(r.tasks[1].task.from_events);
  EXPECT_NE(run_report_text(r).find("an earlier run, from trainctl's events"), std::string::npos) << run_report_text(r);
  // With sacct -D each run has its record: nothing is rebuilt.
  const run_report both =
      build_run_report("920", {task("920", "920", 0, 40, 2, "REQUEUED"), now}, events, kS + 200 * kSec);
  ASSERT_EQ(both.tasks.size(), 2u);
  EXPECT_FALSE(both.tasks[0].task.from_events);
  // A task_end of another array task under the same id (an older array) is not its run.
  events[5].task = 3;
  EXPECT_EQ(build_run_report("920", {now}, events, kS + 200 * kSec).tasks.size(), 1u);
}

// Each node's supervisor records its first rank death of its own; the report names the
// earliest, its error and its lead over the next node's, and says when that lead is
// within the nodes' clock skew.
TEST(RunReport, TheFirstRankToDieIsNamedWithItsError) {
  auto death = [](std::int64_t at_ms, const std::string& node, std::int64_t rank, const std::string& reason,
                  const std::string& text) {
    run_event e = ev(40, "95", "death", 300, -1, reason);
    e.node = node;
    e.figures = {{"rank", rank}, {"at", kS + at_ms}};
    if (reason == "exit") e.figures.emplace_back("status", 1);
    e.text = text;
    return e;
  };
  const std::vector<run_event> base = {ev(5, "95", "first_step", 0)};
  auto report = [&](std::vector<run_event> deaths) {
    std::vector<run_event> events = base;
    events.insert(events.end(), deaths.begin(), deaths.end());
    return build_run_report("95", {task("95", "95", 0, 45, 2, "FAILED")}, events, kS + 100 * kSec);
  };
  const run_report r = report({death(30'450, "n1", 0, "exit", "RuntimeError: [gloo] Connection closed by peer"),
                               death(30'000, "n2", 3, "exit", "RuntimeError: CUDA error: an illegal memory access")});
  const task_report::death& d = r.tasks[0].first_death;
  EXPECT_EQ(d.rank, 3);
  EXPECT_EQ(d.node, "n2");
  EXPECT_NEAR(d.lead_s, 0.45, 1e-9);
  const std::string text = run_report_text(r);
  EXPECT_NE(text.find("rank 3 on n2 died first (exit status 1), 450 ms before the next node's: `RuntimeError: CUDA "
                      "error: an illegal memory access`"),
            std::string::npos)
      << text;
  const auto j = nlohmann::json::parse(run_report_json(r));
  EXPECT_EQ(j["tasks"][0]["first_death"]["error"], "RuntimeError: CUDA error: an illegal memory access");
  EXPECT_EQ(j["tasks"][0]["first_death"]["rank"], 3);

  const std::string close =
      run_report_text(report({death(30'020, "n1", 0, "SIGSEGV", ""), death(30'000, "n2", 3, "SIGABRT", "")}));
  EXPECT_NE(close.find("rank 3 on n2 died (SIGABRT) 20 ms before a rank of another node, within the nodes' clock skew: "
                       "maybe not first\n"),
            std::string::npos)
      << close;
  // The supervisors said what their clocks were: the allowance is theirs, and said.
  auto clocked = [&](run_event e, std::int64_t boot, std::int64_t synced, std::int64_t max_error_us) {
    e.figures.emplace_back("boot", boot);
    e.figures.emplace_back("synced", synced);
    e.figures.emplace_back("max_error_us", max_error_us);
    return e;
  };
  const std::string one_kernel =
      run_report_text(report({clocked(death(30'020, "n1", 0, "SIGSEGV", ""), 7, 0, 16000000),
                              clocked(death(30'000, "n2", 3, "SIGABRT", ""), 7, 0, 16000000)}));
  EXPECT_NE(
      one_kernel.find("rank 3 on n2 died first (SIGABRT), 20 ms before the next node's (clock skew at most 10 ms, "
                      "one kernel's clock)\n"),
      std::string::npos)
      << one_kernel;
  const run_report ntp = report({clocked(death(30'050, "n1", 0, "SIGSEGV", ""), 7, 1, 30000),
                                 clocked(death(30'000, "n2", 3, "SIGABRT", ""), 8, 1, 40000)});
  EXPECT_NEAR(ntp.tasks[0].first_death.skew_s, 0.08, 1e-9);  // 30 + 40 ms, and 10 to notice a death
  EXPECT_NE(run_report_text(ntp).find("50 ms before a rank of another node, within the nodes' clock skew (at most 80 "
                                      "ms, NTP's error bounds 40 + 30 ms): maybe not first"),
            std::string::npos)
      << run_report_text(ntp);
  const std::string unsynced = run_report_text(report({clocked(death(31'000, "n1", 0, "SIGSEGV", ""), 7, 0, 16000000),
                                                       clocked(death(30'000, "n2", 3, "SIGABRT", ""), 8, 1, 40000)}));
  EXPECT_NE(unsynced.find("1.0s before a rank of another node, but n1's clock is not synchronized (its kernel's NTP "
                          "status): maybe not first"),
            std::string::npos)
      << unsynced;
  const std::string alone = run_report_text(report({death(30'000, "n2", 3, "SIGSEGV", "")}));
  EXPECT_NE(alone.find("rank 3 on n2 died first (SIGSEGV)\n"), std::string::npos) << alone;

  // A crashed rank whose `finally` closed its process group ends after its peers that
  // died of the closed connection: the rank that died of its own cause is named.
  const run_report lost = report({death(30'000, "n1", 1, "exit", "ConnectionError: connection closed by peer"),
                                  death(30'085, "n2", 3, "exit", "RuntimeError: a bug (train.py:9 in step)")});
  EXPECT_EQ(lost.tasks[0].first_death.rank, 3);
  EXPECT_EQ(lost.tasks[0].first_death.lost_peer.node, "n1");
  const std::string lost_text = run_report_text(lost);
  EXPECT_NE(lost_text.find("rank 3 on n2 died (exit status 1), the first of its own cause: `RuntimeError: a bug "
                           "(train.py:9 in step)`; rank 1 on n1 died 85 ms before it, of a closed connection (a "
                           "peer's end)"),
            std::string::npos)
      << lost_text;
  const auto lost_json = nlohmann::json::parse(run_report_json(lost))["tasks"][0]["first_death"];
  EXPECT_EQ(lost_json["rank"], 3);
  EXPECT_EQ(lost_json["after_closed_connection"]["node"], "n1");
  EXPECT_NEAR(lost_json["after_closed_connection"]["s_before"].get<double>(), 0.085, 1e-9);
  // Long after (not its teardown), or no death of its own cause: the earliest stays named.
  const std::string late =
      run_report_text(report({death(30'000, "n1", 1, "exit", "RuntimeError: [gloo] Connection reset by peer"),
                              death(42'000, "n2", 3, "SIGSEGV", "")}));
  EXPECT_NE(late.find("rank 1 on n1 died first (exit status 1), 12.0s before the next node's"), std::string::npos)
      << late;
  const std::string both_lost =
      run_report_text(report({death(30'000, "n1", 1, "exit", "ConnectionError: connection closed by peer"),
                              death(30'200, "n2", 3, "exit", "OSError: Broken pipe")}));
  EXPECT_NE(both_lost.find("rank 1 on n1 died first (exit status 1), 200 ms before the next node's"), std::string::npos)
      << both_lost;
}

TEST(RunEvents, AnErrorsTextRoundTripsAsOneFieldAndStaysPrintable) {
  run_event e = ev(10, "96", "death", 5, -1, "exit");
  e.text = "ValueError: 100% of 2 bad\x1b[0m (a b.py:3 in f)";
  const std::string line = format_run_event(e);
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  const auto back = parse_run_events(line + line.substr(0, line.size() - 1) + " text=%1b%5bx%zz\n");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].text, "ValueError: 100% of 2 bad?[0m (a b.py:3 in f)");
  EXPECT_EQ(back[0].reason, "exit");
  EXPECT_EQ(back[1].text, "?[x%zz") << "a later text= replaces; a control character decodes to '?'";
}

// An asynchronous save: the loop waited 2 s (its hand-off), the write went on while it
// trained, and the save was committed 94 s after it began. The report shows both, counts
// the 2 s as the save's and the training around it as training, and times the save for
// the checkpoint advice to its commit.
TEST(RunReport, AnAsynchronousSaveShowsItsBlockingPartAndItsTimeToCommit) {
  std::vector<run_event> events = {ev(10, "1401", "first_step", 0), ev(30, "1401", "save", 400, -1, "save-switch"),
                                   ev(32, "1401", "saved", -1, 2000), ev(124, "1401", "commit", 400, 94000),
                                   ev(150, "1401", "end", 900)};
  const run_report r = build_run_report("1401", {task("1401", "1401", 0, 151, 1)}, events, kS + 1000 * kSec);
  const task_report& t = r.tasks[0];
  EXPECT_DOUBLE_EQ(t.saves_s, 2) << "the blocking part: the loop trained on during the write";
  EXPECT_EQ(t.kept_step, 400);
  const std::string text = run_report_text(r);
  EXPECT_NE(text.find("save at step 400 (save-switch, 2.0s blocking, 1m34s to commit);"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(run_report_json(r));
  EXPECT_DOUBLE_EQ(j["tasks"][0]["saves"][0]["took_s"].get<double>(), 94.0);
  EXPECT_DOUBLE_EQ(j["tasks"][0]["saves"][0]["blocking_s"].get<double>(), 2.0);
}

// The deadline's save handed off to a write longer than the lead: the job's end cut it.
// It never finished (nothing after the save before is kept), and the report says which
// save was cut and by what; the next task resumes from the save before.
TEST(RunReport, AWriteTheJobsEndCutIsNamedAndKeepsNothing) {
  std::vector<run_event> events = {ev(10, "1501", "first_step", 0),
                                   ev(30, "1501", "save", 400, -1, "save-switch"),
                                   ev(31, "1501", "saved", -1, 1000),
                                   ev(40, "1501", "commit", 400, 10000),
                                   ev(50, "1501", "exit", 740, -1, "deadline"),
                                   ev(51, "1501", "saved", -1, 1000),
                                   ev(58, "1501", "write_cut", 740, 8000, "job-end"),
                                   ev(59, "1501", "end", 740)};
  const run_report r = build_run_report("1501", {task("1501", "1501", 0, 60, 1)}, events, kS + 1000 * kSec);
  const task_report& t = r.tasks[0];
  EXPECT_EQ(t.kept_step, 400);
  EXPECT_NEAR(r.startup + r.productive + r.saves + r.lost + r.end, r.allocated, 1e-6);
  const std::string text = run_report_text(r);
  EXPECT_NE(text.find("save at step 740 (deadline, 1.0s blocking, cut after 8.0s of writing: the job's end);"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("save at step 400 (save-switch, 1.0s blocking, 10.0s to commit);"), std::string::npos) << text;
}

// A task that started from step 0 although saves were there: what its resume look could
// not trust (rank 0's first_step), or a save an earlier task committed.
TEST(RunReport, ATaskThatStartedFreshAlthoughSavesExistedIsNamed) {
  std::vector<run_event> events = {ev(10, "1601", "first_step", 0),   ev(30, "1601", "exit", 400, -1, "deadline"),
                                   ev(33, "1601", "saved", -1, 3000), ev(34, "1601", "end", 400),
                                   ev(70, "1602", "first_step", 0),   ev(90, "1602", "end", 300),
                                   ev(110, "1603", "first_step", 0),  ev(120, "1603", "end", 100)};
  events[4].figures = {{"resumed", 0}, {"untrusted", 3}};
  const run_report r = build_run_report(
      "1600",
      {task("1601", "1600_1", 0, 35, 1), task("1602", "1600_2", 60, 91, 1), task("1603", "1600_3", 100, 121, 1)},
      events, kS + 1000 * kSec);
  ASSERT_EQ(r.tasks.size(), 3u);
  EXPECT_EQ(r.tasks[0].fresh_start, "") << "the first task had nothing to resume from";
  EXPECT_EQ(r.tasks[1].fresh_start,
            "started from step 0 although 3 saves were there that resume_path could not trust (the task's log "
            "says why)");
  EXPECT_NE(r.tasks[2].fresh_start.find("started from step 0 although 1600_1 committed the save at step 400"),
            std::string::npos)
      << r.tasks[2].fresh_start;
  EXPECT_NE(run_report_text(r).find("1600_2: started from step 0 although 3 saves"), std::string::npos);
}

// The report's figures as metrics: names with their units and `_total` for counters, one
// sample per cause, the job as a label, and each format's own shape (OpenMetrics names a
// counter's family without `_total` and ends in # EOF).
TEST(RunReport, TheFiguresAsMetricsInBothTextFormats) {
  const run_report r =
      build_run_report("1300", {task("1301", "1300_1", 0, 56, 2)}, task_one_events(), kS + 1000 * kSec);
  const std::string prom = metrics_text(run_report_metrics(r), metrics_format::prometheus);
  EXPECT_NE(prom.find("# TYPE trainctl_allocated_node_seconds_total counter\n"
                      "trainctl_allocated_node_seconds_total{slurm_job=\"1300\"} 112\n"),
            std::string::npos)
      << prom;
  EXPECT_NE(prom.find("trainctl_productive_node_seconds_total{slurm_job=\"1300\"} 74\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("trainctl_badput_node_seconds_total{slurm_job=\"1300\",cause=\"startup\"} 20\n"),
            std::string::npos)
      << prom;
  EXPECT_NE(prom.find("trainctl_saves_total{slurm_job=\"1300\"} 2\n"), std::string::npos) << prom;
  EXPECT_NE(prom.find("trainctl_task_runs_total{slurm_job=\"1300\",state=\"COMPLETED\"} 1\n"), std::string::npos)
      << prom;
  EXPECT_EQ(prom.find("straggler"), std::string::npos) << "a figure the job did not measure is left out";
  EXPECT_EQ(prom.find("# EOF"), std::string::npos);
  const double goodput = r.goodput();
  EXPECT_NEAR(goodput, 74.0 / 112.0, 1e-9);
  EXPECT_NE(prom.find("trainctl_goodput_ratio{slurm_job=\"1300\"} 0.66"), std::string::npos) << prom;

  const std::string om = metrics_text(run_report_metrics(r), metrics_format::openmetrics);
  EXPECT_NE(om.find("# TYPE trainctl_saves counter\ntrainctl_saves_total{slurm_job=\"1300\"} 2\n"), std::string::npos)
      << om;
  EXPECT_EQ(om.substr(om.size() - 6), "# EOF\n");
}

// What comes from outside (a job's name as a label) cannot break a line or a label.
TEST(MetricsText, LabelValuesAndHelpAreEscaped) {
  metric_family f;
  f.name = "x_seconds";
  f.help = "a \\ b\nc";
  f.samples.push_back({{{"job", "a\"b\\c\nd"}}, 1.5});
  EXPECT_EQ(metrics_text({f}, metrics_format::prometheus),
            "# HELP x_seconds a \\\\ b\\nc\n# TYPE x_seconds gauge\nx_seconds{job=\"a\\\"b\\\\c\\nd\"} 1.5\n");
  metric_family none;
  none.name = "empty";
  EXPECT_EQ(metrics_text({none}, metrics_format::openmetrics), "# EOF\n") << "a family without samples is left out";
  EXPECT_TRUE(valid_metric_name("trainctl_goodput_ratio", false));
  EXPECT_FALSE(valid_metric_name("9lives", false));
  EXPECT_FALSE(valid_metric_name("a:b", true));
}
