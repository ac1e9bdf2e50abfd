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
