// A rank's step timing on a clock the test moves: the work per step between agreements,
// the straggler every rank agrees on, its price in the heartbeat slot, and rank 0's step
// times, with no sleep.
#include "step_timing.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace trainctl {
namespace {

constexpr std::int64_t kMs = 1000;  // the clock counts microseconds

// Two ranks, each with its own timing on one clock, agreeing by MAX as the vote does.
struct two_ranks : ::testing::Test {
  std::int64_t now = 1'000'000;
  step_timing a{[this] { return now; }}, b{[this] { return now; }};
  step_timing::rule rule{1.5, 3};
  rank_beat beat_a{}, beat_b{};
  std::int64_t step = 0;

  // Both ranks agree at `step`, rank 0 having worked `a_ms` per step and rank 1 `b_ms`
  // since the last agreement, `steps` steps ago.
  std::pair<step_timing::verdict, step_timing::verdict> agree(std::int64_t a_ms, std::int64_t b_ms,
                                                              std::int64_t steps = 1, bool stalled = false) {
    step += steps;
    std::int64_t va[2] = {0, step_timing::kNoTime}, vb[2] = {0, step_timing::kNoTime};
    const std::int64_t start = now;
    now = start + a_ms * kMs * steps;
    a.time_window(step, 0, &va[0], &va[1]);
    now = start + b_ms * kMs * steps;
    b.time_window(step, 1, &vb[0], &vb[1]);
    now = start + std::max(a_ms, b_ms) * kMs * steps;
    const std::int64_t slowest = std::max(va[0], vb[0]), neg_fastest = std::max(va[1], vb[1]);
    return {a.judge(step, slowest, neg_fastest, stalled, 0, rule, &beat_a),
            b.judge(step, slowest, neg_fastest, stalled, 1, rule, &beat_b)};
  }
};

TEST_F(two_ranks, the_first_agreement_only_starts_the_window) {
  const auto [va, vb] = agree(10, 10);
  EXPECT_EQ(va.straggler, -1);
  EXPECT_FALSE(va.report);
  EXPECT_EQ(beat_a.work.timed_steps.load(), 0);
}

TEST_F(two_ranks, a_rank_half_as_fast_three_times_in_a_row_is_reported_once_on_every_rank) {
  agree(10, 10);
  for (int i = 1; i <= 2; ++i) {
    const auto [va, vb] = agree(10, 20);
    EXPECT_EQ(va.straggler, 1);
    EXPECT_EQ(va.strikes, i);
    EXPECT_FALSE(va.report);
  }
  const auto [va, vb] = agree(10, 20);
  EXPECT_TRUE(va.report);
  EXPECT_TRUE(vb.report) << "every rank reaches the same verdict";
  EXPECT_EQ(va.slowest_us, 20 * kMs);
  EXPECT_EQ(va.fastest_us, 10 * kMs);
  EXPECT_EQ(beat_b.slow.load(), 3) << "the straggler's own slot holds its strikes";
  EXPECT_EQ(beat_a.slow.load(), 0);
  EXPECT_FALSE(agree(10, 20).first.report) << "the episode goes on: not reported again";
}

TEST_F(two_ranks, one_even_window_does_not_end_an_episode_three_do) {
  agree(10, 10);
  for (int i = 0; i < 3; ++i) agree(10, 20);
  agree(10, 10);  // a fast rank descheduled once on a loaded node
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(agree(10, 20).first.report);
  EXPECT_FALSE(agree(10, 20).first.report) << "still the same episode";
  for (int i = 0; i < 3; ++i) agree(10, 10);
  for (int i = 0; i < 2; ++i) agree(10, 20);
  EXPECT_TRUE(agree(10, 20).first.report) << "a new episode after three even agreements";
}

TEST_F(two_ranks, under_a_millisecond_apart_is_noise) {
  agree(1, 1);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(agree(1, 1).first.straggler, -1);
  // 0.4 ms against 0.9 ms: twice as slow, but less than a millisecond apart.
  for (int i = 0; i < 5; ++i) {
    step += 10;
    std::int64_t va[2] = {0, step_timing::kNoTime}, vb[2] = {0, step_timing::kNoTime};
    const std::int64_t start = now;
    now = start + 4 * kMs;
    a.time_window(step, 0, &va[0], &va[1]);
    now = start + 9 * kMs;
    b.time_window(step, 1, &vb[0], &vb[1]);
    EXPECT_EQ(a.judge(step, std::max(va[0], vb[0]), std::max(va[1], vb[1]), false, 0, rule, nullptr).straggler, -1);
    b.judge(step, std::max(va[0], vb[0]), std::max(va[1], vb[1]), false, 1, rule, nullptr);
  }
}

TEST_F(two_ranks, the_straggler_price_is_each_windows_work_but_not_a_stalled_one) {
  agree(10, 10);
  agree(10, 20, 4);
  EXPECT_EQ(beat_b.work.timed_steps.load(), 4);
  EXPECT_EQ(beat_b.work.total_us.load(), 4 * 20 * kMs);
  EXPECT_EQ(beat_a.work.total_us.load(), 4 * 10 * kMs);
  EXPECT_EQ(beat_a.work.slowest_total_us.load(), 4 * 20 * kMs) << "the agreement's slowest, on every rank";
  agree(10, 20, 2, /*stalled=*/true);
  EXPECT_EQ(beat_b.work.timed_steps.load(), 4) << "a window that held a hang's stall is priced as hung";
}

TEST(step_timing, marked_compute_is_the_work_not_the_wait) {
  std::int64_t now = 1'000'000;
  step_timing t{[&now] { return now; }};
  std::int64_t v[2] = {0, step_timing::kNoTime};
  t.judge(1, 0, step_timing::kNoTime, false, 0, {1.5, 3}, nullptr);  // the window begins at step 1
  t.compute_begin();
  now += 7 * kMs;
  t.compute_end();
  now += 50 * kMs;  // waiting for the others
  ASSERT_TRUE(t.time_window(2, 0, &v[0], &v[1]));
  EXPECT_EQ(-v[1], 7 * kMs);
  EXPECT_EQ(v[0] & ((1 << 20) - 1), 0) << "the rank in the low bits";
  EXPECT_EQ(v[0] >> 20, 7 * kMs);
}

TEST(step_timing, no_window_no_vote) {
  std::int64_t now = 1'000'000;
  step_timing t{[&now] { return now; }};
  std::int64_t v[2] = {0, step_timing::kNoTime};
  EXPECT_FALSE(t.time_window(5, 0, &v[0], &v[1]));
  EXPECT_EQ(v[1], step_timing::kNoTime);
  t.judge(5, 0, step_timing::kNoTime, false, 0, {1.5, 3}, nullptr);
  EXPECT_FALSE(t.time_window(5, 0, &v[0], &v[1])) << "the same step: no step in the window";
}

TEST(step_timing, rank0_counts_step_windows_but_not_busy_or_stalled_ones) {
  std::int64_t now = 1'000'000;
  step_timing t{[&now] { return now; }};
  t.count_steps(0, false, false);  // the first agreement
  now += 30 * kMs;
  t.count_steps(3, /*busy_next=*/true, false);  // a save runs in the next window
  EXPECT_EQ(t.step_counts().steps(), 3);
  now += 5000 * kMs;
  t.count_steps(4, false, false);
  EXPECT_EQ(t.step_counts().steps(), 3) << "the save's window is no step's time";
  now += 10 * kMs;
  t.mark_busy();  // an evaluation began in this window
  t.count_steps(5, false, false);
  EXPECT_EQ(t.step_counts().steps(), 3);
  now += 10 * kMs;
  t.count_steps(6, false, /*stalled=*/true);
  EXPECT_EQ(t.step_counts().steps(), 3) << "a stall is a hang's time";
  now += 20 * kMs;
  t.count_steps(8, false, false);
  EXPECT_EQ(t.step_counts().steps(), 5);
}

}  // namespace
}  // namespace trainctl
