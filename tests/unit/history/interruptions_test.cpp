// trainctl report's interruptions: each run that ended before its loop did, its cause,
// and its cost split into detection, teardown, the resuming run's queue, start-up and
// restore, and the steps trained again; the table's total is the sum of its rows.
#include "interruptions.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "report_events.hpp"
#include "report_views.hpp"

using namespace trainctl;

namespace {

using trainctl_test::ev;
using trainctl_test::kS;
using trainctl_test::kSec;

task_record task(const std::string& id, const std::string& name, std::int64_t start_s, std::int64_t end_s,
                 const std::string& state) {
  return trainctl_test::task(id, name, start_s, end_s, 2, state);
}

// An array of four runs, one after the other:
//   70_1 (0 .. 46 s): a save at step 200, preempted: the notice at +40 s, the ranks agree
//        at +40.2 s to save (3 s) and exit at step 700; requeued;
//   70_1 again (+50 .. +120 s): queued 4 s, start-up 6 s of which 2 s restore, resumes at
//        701; saves at 900 (+70 .. +72 s), then crashes: rank 0's last agreement at step
//        1100 (+95 s), End +100 s (FAILED);
//   70_2 (+110 .. +155 s): resumes at 901 (200 steps trained again), its ranks stall at
//        +140 s, the hang notice at +150 s, End +155 s (the step ended, FAILED);
//   70_3 (+160 .. +200 s): resumes at 901 again; the kill switch at +190 s, its exit save
//        2 s, never resumed.
run_report four_runs() {
  std::vector<run_event> e = {
      ev(5, "71", "first_step", 0),
      ev(20, "71", "save", 200, -1, "save-switch"),
      ev(22, "71", "saved", -1, 2000),
      ev(40, "71", "notice", -1, -1, "preempted"),
      ev(40.2, "71", "exit", 700, -1, "preempted"),
      ev(43.2, "71", "saved", -1, 3000),
      ev(44, "71", "end", 700),
      ev(54, "71", "restore", -1, 2000),
      ev(56, "71", "first_step", 701),
      ev(70, "71", "save", 900, -1, "save-switch"),
      ev(72, "71", "saved", -1, 2000),
      ev(99, "71", "end", 1100, 4000),
      ev(113, "72", "restore", -1, 1000),
      ev(115, "72", "first_step", 901),
      ev(150, "72", "notice", -1, 10000, "hang"),
      ev(163, "73", "first_step", 901),
      ev(190, "73", "exit", 1200, -1, "kill-switch"),
      ev(192, "73", "saved", -1, 2000),
      ev(193, "73", "end", 1200),
  };
  std::vector<task_record> tasks = {task("71", "70_1", 0, 46, "REQUEUED"), task("71", "70_1", 50, 100, "FAILED"),
                                    task("72", "70_2", 110, 155, "FAILED"), task("73", "70_3", 160, 200, "COMPLETED")};
  tasks[1].submit_ms = tasks[1].eligible_ms = kS + 46 * kSec;
  return build_run_report("70", tasks, e, kS + 1000 * kSec);
}

}  // namespace

TEST(Interruptions, EachRunEndedBeforeItsLoopHasACauseAndTheResumingRunsCosts) {
  const run_report r = four_runs();
  const interruption_costs c = find_interruptions(r);
  ASSERT_EQ(c.each.size(), 4u);
  const interruption& pre = c.each[0];
  EXPECT_EQ(pre.cause, "preemption");
  EXPECT_NEAR(pre.detect_s, 0.2, 1e-9) << "the notice to the agreed exit";
  EXPECT_NEAR(pre.teardown_s, 5.8, 1e-9) << "the agreed exit to SLURM's End: the save and the ends";
  ASSERT_NE(pre.resumed, nullptr);
  EXPECT_EQ(pre.resumed->task.start_ms, kS + 50 * kSec) << "the requeued run resumed it";
  EXPECT_DOUBLE_EQ(pre.queue_s, 4);
  EXPECT_DOUBLE_EQ(pre.startup_s, 4);
  EXPECT_DOUBLE_EQ(pre.restore_s, 2);
  EXPECT_EQ(pre.replayed_steps, 0) << "its exit save kept every step";

  const interruption& crash = c.each[1];
  EXPECT_EQ(crash.cause, "crash") << "FAILED with no exit agreed";
  EXPECT_LT(crash.detect_s, 0) << "the events do not date a crash";
  EXPECT_DOUBLE_EQ(crash.teardown_s, 5) << "rank 0's last agreement to the End";
  EXPECT_EQ(crash.replayed_steps, 200) << "901 .. 1100, trained again by 70_2";
  EXPECT_DOUBLE_EQ(crash.replayed_s, 23) << "from the save's end to the last agreement; after it, teardown";

  const interruption& hang = c.each[2];
  EXPECT_EQ(hang.cause, "hang") << "the step ended by the supervisor";
  EXPECT_DOUBLE_EQ(hang.detect_s, 10) << "the stall to the hang notice";
  EXPECT_DOUBLE_EQ(hang.teardown_s, 5);
  EXPECT_DOUBLE_EQ(hang.replayed_s, 25) << "its first step to the stall: the stall is detection and teardown";
  EXPECT_EQ(hang.replayed_steps, -1) << "its last step is not known (rank 0 said no end)";

  const interruption& kill = c.each[3];
  EXPECT_EQ(kill.cause, "kill switch");
  EXPECT_EQ(kill.resumed, nullptr);
  EXPECT_DOUBLE_EQ(kill.queue_s + kill.startup_s + kill.restore_s, 0) << "no run resumed it";
  EXPECT_EQ(kill.replayed_steps, 0);

  EXPECT_EQ(c.causes.at("preemption"), 1);
  EXPECT_EQ(c.causes.at("crash"), 1);
  EXPECT_EQ(c.causes.at("hang"), 1);
  EXPECT_EQ(c.causes.at("kill switch"), 1);
}

TEST(Interruptions, TheTotalIsTheSumOfTheRows) {
  const run_report r = four_runs();
  const interruption_costs c = find_interruptions(r);
  double detect = 0, teardown = 0, queue = 0, startup = 0, restore = 0, replayed = 0;
  std::int64_t steps = 0;
  for (const interruption& x : c.each) {
    detect += x.detect_s < 0 ? 0 : x.detect_s;
    teardown += x.teardown_s;
    queue += x.queue_s;
    startup += x.startup_s;
    restore += x.restore_s;
    replayed += x.replayed_s;
    steps += std::max<std::int64_t>(0, x.replayed_steps);
  }
  EXPECT_DOUBLE_EQ(c.detect_s, detect);
  EXPECT_DOUBLE_EQ(c.teardown_s, teardown);
  EXPECT_DOUBLE_EQ(c.queue_s, queue);
  EXPECT_DOUBLE_EQ(c.startup_s, startup);
  EXPECT_DOUBLE_EQ(c.restore_s, restore);
  EXPECT_DOUBLE_EQ(c.replayed_s, replayed);
  EXPECT_EQ(c.replayed_steps, steps);
  // Every run after the first resumed one: their queues, start-ups and restores are the
  // report's, less the first run's.
  double all_queue = 0, all_startup = 0, all_restore = 0;
  for (std::size_t i = 1; i < r.tasks.size(); ++i) {
    all_queue += r.tasks[i].queue_s;
    all_startup += r.tasks[i].startup_s;
    all_restore += r.tasks[i].restore_s;
  }
  EXPECT_DOUBLE_EQ(c.queue_s, all_queue);
  EXPECT_DOUBLE_EQ(c.startup_s, all_startup);
  EXPECT_DOUBLE_EQ(c.restore_s, all_restore);

  const std::string text = interruptions_text(c);
  EXPECT_NE(text.find("interruptions 4 (crash 1, hang 1, kill switch 1, preemption 1)"), std::string::npos) << text;
  EXPECT_NE(text.find("preemption        0.2s      5.8s     4.0s      4.0s     2.0s  0 steps (0.0s)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("kill switch          -"), std::string::npos) << text;
  EXPECT_NE(text.find(", not resumed"), std::string::npos) << text;
  EXPECT_NE(text.find("at least 200 steps (48.0s)"), std::string::npos) << "the hang's steps are not known: " << text;
  EXPECT_NE(text.find("total"), std::string::npos) << text;
  EXPECT_NE(run_report_text(r).find(text), std::string::npos) << "the report shows the table";

  const auto j = nlohmann::json::parse(run_report_json(r));
  ASSERT_EQ(j["interruptions"].size(), 4u);
  EXPECT_EQ(j["interruptions"][1]["cause"], "crash");
  EXPECT_TRUE(j["interruptions"][1]["detect_s"].is_null());
  EXPECT_EQ(j["interruptions"][1]["replayed_steps"], 200);
  EXPECT_EQ(j["interruptions"][1]["resumed_by"], "70_2");
  EXPECT_TRUE(j["interruptions"][3]["queue_s"].is_null());
  EXPECT_EQ(j["interruption_causes"]["preemption"], 1);
}

TEST(Interruptions, AFinishedLoopARunningRunAndACompletedRunWithoutAnExitAreNone) {
  const run_report r =
      build_run_report("80",
                       {task("81", "80_1", 0, 30, "COMPLETED"), task("82", "80_2", 40, 60, "COMPLETED"),
                        task("83", "80_3", 70, -1, "RUNNING")},
                       {ev(5, "81", "first_step", 0), ev(29, "81", "end", 400), ev(45, "82", "first_step", 0),
                        ev(75, "83", "first_step", 0)},
                       kS + 100 * kSec);
  EXPECT_TRUE(find_interruptions(r).each.empty());
  EXPECT_EQ(interruptions_text(find_interruptions(r)), "");
}

TEST(Interruptions, ATimeLimitThatCutTheRunAndARunWithoutEventsTakeTheirCauseFromSlurm) {
  // 90_1 reaches its time limit with no notice (no --graceful-exit): TIMEOUT, the steps
  // since its save at 300 trained again by 90_2, which starts from 301. 90_2 has no
  // trainctl events at all: its steps are not known.
  const run_report r = build_run_report(
      "90", {task("91", "90_1", 0, 60, "TIMEOUT"), task("92", "90_2", 65, 80, "NODE_FAIL")},
      {ev(5, "91", "first_step", 0), ev(20, "91", "save", 300, -1, "save-switch"), ev(22, "91", "saved", -1, 2000),
       ev(59, "91", "end", 1000, 500), ev(70, "92", "first_step", 301)},
      kS + 100 * kSec);
  const interruption_costs c = find_interruptions(r);
  ASSERT_EQ(c.each.size(), 2u);
  EXPECT_EQ(c.each[0].cause, "time limit");
  EXPECT_EQ(c.each[0].replayed_steps, 700) << "301 .. 1000";
  EXPECT_DOUBLE_EQ(c.each[0].teardown_s, 1.5) << "the last agreement (+58.5 s) to the End";
  EXPECT_EQ(c.each[1].cause, "node failure");
  EXPECT_EQ(c.each[1].replayed_steps, -1) << "no step after its first is known";
}

// Snapshots (issue 65): rank 1 dies at step 237 after the save at step 200; the nodes'
// supervisors write out their ranks' snapshots (the newest of step 235 on one node, 240
// on the other, whose ranks were a few steps on), and the next run resumes at 236.
TEST(Interruptions, AResumeFromASnapshotCountsItsStepsAndWhatTheSaveAloneWouldHaveCost) {
  const std::vector<run_event> e = {
      ev(5, "81", "first_step", 0),    ev(20, "81", "save", 200, -1, "loop"), ev(20.5, "81", "saved", -1, 500),
      ev(30, "81", "snapshots", 235),  ev(30, "81", "snapshots", 240),        ev(31, "81", "end", 237),
      ev(45, "82", "first_step", 236),
  };
  const std::vector<task_record> tasks = {task("81", "80_1", 0, 32, "FAILED"), task("82", "80_2", 40, 60, "COMPLETED")};
  const run_report r = build_run_report("80", tasks, e, kS + 1000 * kSec);
  const interruption_costs c = find_interruptions(r);
  ASSERT_EQ(c.each.size(), 1u);
  const interruption& x = c.each[0];
  EXPECT_EQ(x.snapshot_step, 235);
  EXPECT_EQ(x.replayed_steps, 2) << "237 and 236 again, not 201 to 237";
  EXPECT_EQ(x.replayed_without_snapshot, 37);
  EXPECT_NE(interruptions_text(c).find(
                "80_1: snapshot of step 235 written by the supervisors: 2 steps replayed instead of 37\n"),
            std::string::npos)
      << interruptions_text(c);
}

// A node that fails takes its ranks' snapshots with it: the next run resumes from the
// save, and the report says why the snapshots the other node wrote did not help.
TEST(Interruptions, ANodeFailureSaysItsSnapshotsDiedWithIt) {
  const std::vector<run_event> e = {
      ev(5, "91", "first_step", 0),   ev(20, "91", "save", 200, -1, "loop"), ev(20.5, "91", "saved", -1, 500),
      ev(30, "91", "snapshots", 235), ev(45, "92", "first_step", 201),
  };
  const std::vector<task_record> tasks = {task("91", "90_1", 0, 32, "NODE_FAIL"),
                                          task("92", "90_2", 40, 60, "COMPLETED")};
  const run_report r = build_run_report("90", tasks, e, kS + 1000 * kSec);
  const interruption_costs c = find_interruptions(r);
  ASSERT_EQ(c.each.size(), 1u);
  EXPECT_EQ(c.each[0].cause, "node failure");
  EXPECT_EQ(c.each[0].snapshot_step, -1);
  EXPECT_NE(interruptions_text(c).find("90_1: a node failed: its ranks' snapshots in memory died with it"),
            std::string::npos)
      << interruptions_text(c);
}
