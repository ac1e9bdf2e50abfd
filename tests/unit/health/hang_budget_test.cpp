#include "hang_budget.hpp"

#include <gtest/gtest.h>

#include "options.hpp"

using namespace trainctl;
using namespace std::chrono_literals;

TEST(HangBudget, TrainingIsTheHangTimeoutAndAPhaseThreeTimesItsLongestAtLeastThat) {
  hang_rules r;
  r.timeout = 10s;
  EXPECT_EQ(budget_for(r, "", 0).budget, 10s);
  EXPECT_EQ(budget_for(r, "", 99000).budget, 10s) << "a set timeout is not learnt";
  EXPECT_EQ(budget_for(r, "save", 25000).budget, 75s);
  EXPECT_EQ(budget_for(r, "save", 1000).budget, 10s) << "never under --hang-timeout";
  EXPECT_EQ(budget_for(r, "eval", 0).budget, kFirstPhaseBudget) << "nothing finished yet";
  EXPECT_NE(budget_for(r, "eval", 0).why.find("no 'eval' phase has finished yet"), std::string::npos);
  r.timeout = 2h;
  EXPECT_EQ(budget_for(r, "eval", 0).budget, 2h) << "the first-time budget is at least the timeout too";
}

TEST(HangBudget, ASetPhaseBudgetWins) {
  hang_rules r;
  r.timeout = 10s;
  r.set["save"] = 40s;
  EXPECT_EQ(budget_for(r, "save", 0).budget, 40s);
  EXPECT_EQ(budget_for(r, "save", 600000).budget, 40s);
  EXPECT_EQ(budget_for(r, "eval", 20000).budget, 60s);
}

TEST(HangBudget, AutoLearnsTrainingFromTheLongestQuietTime) {
  hang_rules r;
  r.timeout = option::kHangTimeoutAuto;
  EXPECT_EQ(budget_for(r, "", 0).budget, kFirstPhaseBudget);
  EXPECT_EQ(budget_for(r, "", 2000).budget, kAutoHangFloor) << "5 x 2 s is under the floor";
  EXPECT_EQ(budget_for(r, "", 30000).budget, 150s);
  EXPECT_EQ(budget_for(r, "save", 30000).budget, 90s);
  EXPECT_EQ(budget_for(r, "save", 0).budget, kFirstPhaseBudget);
}

// A rank that marked its checkpoint restore before its first agreement: inside the phase,
// the phase's budget judges it; once the phase ended, and until the first agreement, the
// start timeout does again, from the phase's end (not the training budget: the first data
// load or a compile may follow the restore). After its first agreement, the later of the
// agreement and the last phase change.
TEST(HangBudget, APhaseEndedBeforeTheFirstAgreementLeavesTheRankToTheStartClock) {
  rank_clocks inside = clocks_of(0, false, 5000);
  EXPECT_TRUE(inside.started);
  EXPECT_FALSE(inside.agreed);
  EXPECT_EQ(inside.hang_clock, 5000);
  rank_clocks after = clocks_of(0, true, 9000);
  EXPECT_FALSE(after.started) << "the training budget must not judge the rest of its start-up";
  EXPECT_EQ(after.hang_clock, 0);
  EXPECT_EQ(after.start_clock, 9000);
  rank_clocks fresh = clocks_of(0, true, 0);
  EXPECT_FALSE(fresh.started);
  EXPECT_EQ(fresh.start_clock, 0) << "from the process's start";
  rank_clocks training = clocks_of(12000, true, 9000);
  EXPECT_TRUE(training.started && training.agreed);
  EXPECT_EQ(training.hang_clock, 12000);
  EXPECT_EQ(clocks_of(12000, false, 15000).hang_clock, 15000) << "an evaluation that began after it";
}
