// trainctl drill's table and verdict from what a drill measured: each broken loop gets
// its line, a clean drill says it is ready, and the advice names values an option takes.
#include <gtest/gtest.h>

#include "drill_job.hpp"
#include "drill_report.hpp"

namespace trainctl {
namespace {

std::vector<drill_row> all_ok() {
  return {{"start-up", "every rank reaches check()", "step 0", 0.5, drill_row::kOk},
          {"save switch", "every rank saves once, at one step", "step 20", 2.7, drill_row::kOk}};
}

bool has_line(const std::vector<std::string>& lines, const std::string& start) {
  for (const std::string& l : lines)
    if (l.rfind(start, 0) == 0) return true;
  return false;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

TEST(DrillReport, DurationsReadAsSecondsAndRoundUp) {
  EXPECT_EQ(drill_duration(2003), "2.1s");
  EXPECT_EQ(drill_duration(40000), "40.0s");
  EXPECT_EQ(drill_duration(0), "0.0s");
  EXPECT_EQ(drill_duration(192001), "193s");
}

TEST(DrillReport, ACleanDrillIsReady) {
  drill_figures f;
  f.lead_ms = 600000;
  f.longest_save_ms = 2000;
  const auto lines = drill_verdict(f, all_ok());
  EXPECT_TRUE(drill_clean(f, all_ok()));
  EXPECT_EQ(lines.back(), "verdict: ready for the long run") << joined(lines);
  EXPECT_TRUE(has_line(lines, "graceful exit: the longest save took 2.0s; --graceful-exit=10m leaves it room"))
      << joined(lines);
}

TEST(DrillReport, ASaveLongerThanTheLeadWouldBeCut) {
  drill_figures f;
  f.lead_ms = 30000;
  f.longest_save_ms = 40000;
  const auto lines = drill_verdict(f, all_ok());
  EXPECT_FALSE(drill_clean(f, all_ok()));
  EXPECT_TRUE(has_line(lines,
                       "the save took 40.0s; the lead is 30.0s: a deadline save would be cut; use "
                       "--graceful-exit=70s or --graceful-exit=auto"))
      << joined(lines);
  f.lead_auto = true;  // auto learns it: nothing to fix
  EXPECT_TRUE(drill_clean(f, all_ok()));
}

// The margin follows from what was measured (issue 63: a 30 s lead for a 1.1 s save was
// once called "too little margin"): the save x1.5, the longest step, and 10 s.
TEST(DrillReport, TheMarginFollowsFromTheMeasuredSaveAndStep) {
  drill_figures f;
  f.lead_ms = 30000;
  f.longest_save_ms = 1100;
  f.longest_quiet_ms = 50;
  auto lines = drill_verdict(f, all_ok());
  EXPECT_TRUE(drill_clean(f, all_ok())) << joined(lines);
  EXPECT_TRUE(has_line(lines,
                       "graceful exit: the longest save took 1.1s; --graceful-exit=30s leaves it room (12s "
                       "would do)"))
      << joined(lines);
  f.lead_ms = 40000;  // a 20 s save and 5 s steps need 30 + 5 + 10 s
  f.longest_save_ms = 20000;
  f.longest_quiet_ms = 5000;
  lines = drill_verdict(f, all_ok());
  EXPECT_FALSE(drill_clean(f, all_ok()));
  EXPECT_TRUE(has_line(lines,
                       "the save took 20.0s; the lead is 40.0s: too little margin for a slower save; use "
                       "--graceful-exit=45s or --graceful-exit=auto"))
      << joined(lines);
}

TEST(DrillReport, EachBrokenLoopGetsItsLine) {
  drill_figures never;
  never.never_checked = true;
  EXPECT_TRUE(has_line(drill_verdict(never, {}), "the loop never reached trainctl's check()"));
  drill_figures hang;
  hang.false_hang = true;
  hang.hang_timeout_ms = 30000;
  EXPECT_TRUE(has_line(drill_verdict(hang, {}),
                       "a hang was found before the drill stopped any rank: part of the loop runs longer than "
                       "--hang-timeout=30s"));
  drill_figures zero;
  zero.resumed_at_zero = true;
  EXPECT_TRUE(has_line(drill_verdict(zero, {}), "task 2 started at step 0 although task 1 had saved"));
  for (const drill_figures& f : {never, hang, zero}) EXPECT_FALSE(drill_clean(f, {}));
}

TEST(DrillReport, AFailedRowIsNoCleanDrill) {
  std::vector<drill_row> rows = all_ok();
  rows.push_back({"resume", "task 2 starts after the last save", "never", -1, drill_row::kProblem});
  EXPECT_FALSE(drill_clean(drill_figures{}, rows));
  const std::string table = drill_table(rows);
  EXPECT_NE(table.find("FAIL  resume"), std::string::npos) << table;
  EXPECT_NE(table.find("ok    save switch"), std::string::npos) << table;
}

// The hang row reads the summary as health/stack_dump writes it: the stopped rank among
// those elsewhere is named; a one-rank job or a tie (two ranks, two frames) names no odd
// one out, which is no fault of the loop; a summary that blames another rank, or none
// where one could be told, is a problem.
TEST(DrillReport, TheHangRowReadsTheSummary) {
  EXPECT_EQ(stopped_rank_in_summary("3 of 4 ranks in all_reduce (c10d.py:1541); elsewhere: rank 1 on n1 in hang "
                                    "(train_example.py:52)",
                                    1),
            stopped_rank_naming::named);
  EXPECT_EQ(stopped_rank_in_summary("3 of 4 ranks in all_reduce (c10d.py:1541); elsewhere: rank 3 on n2 in hang "
                                    "(train_example.py:52)",
                                    1),
            stopped_rank_naming::not_named);
  EXPECT_EQ(stopped_rank_in_summary("2 ranks in 2 frames, no one frame holding the most: rank 0 on n1 in wait "
                                    "(light_rank.py:40); rank 1 on n1 in hang (train_example.py:52)",
                                    1),
            stopped_rank_naming::cannot_tell);
  EXPECT_EQ(stopped_rank_in_summary("1 of 1 ranks in hang (train_example.py:52)", 0), stopped_rank_naming::cannot_tell);
  EXPECT_EQ(stopped_rank_in_summary("2 of 2 ranks in hang (train_example.py:52)", 1), stopped_rank_naming::not_named);
  EXPECT_EQ(stopped_rank_in_summary("rank 1 on n1 in hang", 1), stopped_rank_naming::not_named);
}

// The findings the drill forgets are its own tasks' only: each task of array 512 has a
// job id of its own (512, 513), and job 5120 (another array, whose id starts the same) or
// an older array of the same id (before the drill was submitted) is not the drill's.
TEST(DrillJobs, TheDrillsTasksAreItsOwnJobIdsNotAPrefix) {
  auto event = [](std::int64_t ms, const std::string& job) {
    run_event e;
    e.ms = ms;
    e.job = job;
    e.what = "first_step";
    return e;
  };
  const std::vector<run_event> events = {event(500, "498"), event(1000, "512"), event(2000, "513")};
  const std::set<std::string> jobs = commands::drill_task_jobs("512", events, 900);
  EXPECT_EQ(jobs, (std::set<std::string>{"512", "513"}));
  EXPECT_EQ(jobs.count("5120"), 0u);
  EXPECT_EQ(commands::drill_task_jobs("512", {}, 0), (std::set<std::string>{"512"}));
}

}  // namespace
}  // namespace trainctl
