#include "step_times.hpp"

#include <gtest/gtest.h>

using trainctl::step_times;

TEST(StepTimes, NoneCountedSaysNothing) {
  const auto s = step_times().summary();
  EXPECT_EQ(s.steps, 0);
  EXPECT_EQ(s.median_us, 0);
  EXPECT_EQ(s.outlier_steps, 0);
}

// 1,000 steps of 100 ms give or take 2 ms, and 10 of 1 s (a stalled data loader): the 10
// are the outliers, 9 s beyond the median together.
TEST(StepTimes, SlowStepsAreTheOutliers) {
  step_times t;
  for (int i = 0; i < 1000; ++i) t.add(98'000 + (i % 5) * 1'000, 1);
  for (int i = 0; i < 10; ++i) t.add(1'000'000, 1);
  const auto s = t.summary();
  EXPECT_EQ(s.steps, 1010);
  EXPECT_NEAR(s.median_us, 100'000, 1'000);
  EXPECT_LT(s.mad_us, 3'000);
  EXPECT_EQ(s.outlier_steps, 10);
  EXPECT_NEAR(s.excess_us, 9'000'000, 9'000'000 * 0.02);
}

// Every step as long as the next: MAD 0, and still no step is called slow for being
// one bucket (1 %) above the median.
TEST(StepTimes, EvenStepsHaveNoOutliers) {
  step_times t;
  for (int i = 0; i < 500; ++i) t.add(50'000 + (i % 2) * 600, 1);
  const auto s = t.summary();
  EXPECT_EQ(s.outlier_steps, 0);
  EXPECT_EQ(s.excess_us, 0);
  EXPECT_GE(s.threshold_us, 55'000);
}

// A window of several steps counts each step at the window's mean.
TEST(StepTimes, AWindowCountsItsSteps) {
  step_times t;
  t.add(1'000'000, 10);  // 10 steps of 100 ms
  t.add(100'000, 1);
  t.add(5'000'000, 2);  // 2 steps of 2.5 s
  const auto s = t.summary();
  EXPECT_EQ(s.steps, 13);
  EXPECT_NEAR(s.median_us, 100'000, 1'000);
  EXPECT_EQ(s.outlier_steps, 2);
}

// Times out of the buckets' range count in the end buckets, never out of bounds.
TEST(StepTimes, ExtremesStayInRange) {
  step_times t;
  t.add(0, 1);
  t.add(std::int64_t{1} << 50, 1);
  t.add(-5, 1);   // not counted
  t.add(100, 0);  // not counted
  EXPECT_EQ(t.summary().steps, 2);
}
