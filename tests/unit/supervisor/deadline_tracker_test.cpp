// The deadline a supervisor fires: EndTime - graceful exit, how it moves with EndTime and
// with a learnt save, and why it fires, on a clock the test moves.
#include "deadline_tracker.hpp"

#include <gtest/gtest.h>

namespace trainctl {
namespace {

using std::chrono::milliseconds;

constexpr std::int64_t kT0 = 1'800'000'000'000;  // a wall-clock moment, ms
constexpr std::int64_t kMinute = 60'000;

struct tracker_test : ::testing::Test {
  std::int64_t now = kT0;
  milliseconds graceful{5 * kMinute};
  std::string why;  // as --graceful-exit=auto says it
  bool has_graceful = true;
  deadline_tracker dl{[this] { return now; },
                      [this](std::int64_t) -> std::optional<graceful_exit_value> {
                        if (!has_graceful) return std::nullopt;
                        return graceful_exit_value{graceful, why};
                      },
                      query_slots{}, 5 * kMinute};
};

TEST_F(tracker_test, first_endtime_sets_the_deadline_graceful_exit_before_it) {
  ASSERT_TRUE(dl.take_read(now));
  const auto m = dl.set_end(kT0 + 60 * kMinute, 3600);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->deadline_ms, kT0 + 55 * kMinute);
  EXPECT_FALSE(m->past);
  EXPECT_EQ(m->left_ms, 60 * kMinute);
  EXPECT_EQ(dl.deadline_ms(), kT0 + 55 * kMinute);
  EXPECT_EQ(dl.limit_s(), 3600);
  EXPECT_TRUE(dl.armed());
}

TEST_F(tracker_test, no_graceful_exit_means_no_deadline) {
  has_graceful = false;
  EXPECT_FALSE(dl.set_end(kT0 + 60 * kMinute, 3600));
  EXPECT_EQ(dl.end_ms(), kT0 + 60 * kMinute);
  EXPECT_FALSE(dl.armed());
  now += 120 * kMinute;
  EXPECT_FALSE(dl.fire_if_due());
}

TEST_F(tracker_test, endtime_moved_by_a_minute_moves_the_deadline_by_a_minute) {
  dl.set_end(kT0 + 60 * kMinute, 3600);
  now += 10 * kMinute;
  const auto m = dl.set_end(kT0 + 61 * kMinute, 3660);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->deadline_ms, kT0 + 56 * kMinute);
  EXPECT_FALSE(dl.set_end(kT0 + 61 * kMinute)) << "the same EndTime again changes nothing";
}

TEST_F(tracker_test, a_staler_read_is_not_taken) {
  EXPECT_TRUE(dl.take_read(kT0));
  EXPECT_FALSE(dl.take_read(kT0));
  EXPECT_FALSE(dl.take_read(kT0 - 1));
  EXPECT_TRUE(dl.take_read(kT0 + 1));
  EXPECT_EQ(dl.end_read_ms(), kT0 + 1);
}

TEST_F(tracker_test, fires_once_at_the_deadline) {
  dl.set_end(kT0 + 60 * kMinute, 3600);
  now = kT0 + 55 * kMinute - 1;
  EXPECT_FALSE(dl.fire_if_due());
  now += 1;
  EXPECT_EQ(dl.fire_if_due().value_or(""), "deadline reached");
  EXPECT_TRUE(dl.fired());
  EXPECT_FALSE(dl.fire_if_due());
}

TEST_F(tracker_test, a_deadline_past_when_learnt_fires_at_once_and_says_so) {
  graceful = milliseconds(90 * kMinute);  // longer than the whole limit
  const auto m = dl.set_end(kT0 + 60 * kMinute, 3600);
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->past);
  EXPECT_EQ(dl.fire_if_due().value_or(""), "deadline already past when EndTime was read (see the line above)");
}

TEST_F(tracker_test, a_stopped_supervisor_fires_late_and_says_it_was_late) {
  dl.set_end(kT0 + 60 * kMinute, 3600);
  now = kT0 + 55 * kMinute + 30'000;
  EXPECT_EQ(dl.fire_if_due().value_or(""), "deadline reached 30 s ago (this supervisor was stopped or busy)");
}

TEST_F(tracker_test, a_raised_time_limit_after_the_deadline_fired_leaves_it_fired) {
  dl.set_end(kT0 + 60 * kMinute, 3600);
  now = kT0 + 55 * kMinute;
  ASSERT_TRUE(dl.fire_if_due());
  EXPECT_FALSE(dl.set_end(kT0 + 120 * kMinute, 7200));
  EXPECT_EQ(dl.deadline_ms(), kT0 + 55 * kMinute);
  EXPECT_EQ(dl.end_ms(), kT0 + 120 * kMinute) << "EndTime is still the one read";
  now += 60 * kMinute;
  EXPECT_FALSE(dl.fire_if_due());
}

TEST_F(tracker_test, a_raised_time_limit_before_the_deadline_moves_it_later) {
  dl.set_end(kT0 + 60 * kMinute, 3600);
  now = kT0 + 50 * kMinute;
  const auto m = dl.set_end(kT0 + 120 * kMinute, 7200);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->deadline_ms, kT0 + 115 * kMinute);
  now = kT0 + 55 * kMinute;
  EXPECT_FALSE(dl.fire_if_due()) << "the old deadline no longer fires";
}

TEST_F(tracker_test, a_longer_save_moves_the_deadline_earlier) {
  why = "learnt";
  dl.set_end(kT0 + 60 * kMinute, 3600);
  graceful = milliseconds(8 * kMinute);
  const auto m = dl.regrace();
  ASSERT_TRUE(m);
  EXPECT_EQ(m->deadline_ms, kT0 + 52 * kMinute);
  EXPECT_EQ(m->graceful.why, "learnt");
  EXPECT_FALSE(dl.regrace()) << "the same graceful exit again changes nothing";
}

TEST_F(tracker_test, a_longer_save_learnt_past_the_new_deadline_says_it_was_learnt_late) {
  dl.set_end(kT0 + 60 * kMinute, 3600);
  now = kT0 + 54 * kMinute;
  graceful = milliseconds(8 * kMinute);  // the deadline is now 2 minutes ago
  const auto m = dl.regrace();
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->past);
  EXPECT_EQ(dl.fire_if_due().value_or(""),
            "deadline already 120 s past when this supervisor learnt it (a longer save moved it earlier, or it came "
            "from a stopped publisher)");
}

TEST_F(tracker_test, a_save_learnt_without_endtime_moves_nothing) {
  graceful = milliseconds(8 * kMinute);
  EXPECT_FALSE(dl.regrace());
  EXPECT_FALSE(dl.armed());
}

TEST_F(tracker_test, a_given_deadline_fired_late_is_this_supervisors_lateness) {
  dl.set_given(kT0 - 10'000);
  EXPECT_EQ(dl.fire_if_due().value_or(""), "deadline reached 10 s ago (this supervisor was stopped or busy)");
}

TEST_F(tracker_test, a_takeover_adopts_the_published_deadline_only_when_none_is_known) {
  dl.adopt(kT0 + kMinute);
  EXPECT_EQ(dl.deadline_ms(), kT0 + kMinute);
  dl.adopt(kT0 + 2 * kMinute);
  EXPECT_EQ(dl.deadline_ms(), kT0 + kMinute) << "a known deadline stays";
}

TEST_F(tracker_test, a_takeover_after_the_published_deadline_says_it_was_learnt_late) {
  now = kT0 + kMinute;
  dl.adopt(kT0);
  EXPECT_EQ(dl.fire_if_due().value_or(""),
            "deadline already 60 s past when this supervisor learnt it (a longer save moved it earlier, or it came "
            "from a stopped publisher)");
}

TEST_F(tracker_test, a_fired_deadline_from_the_publisher_is_not_fired_again) {
  dl.set_end(kT0 + 60 * kMinute, 3600);
  dl.mark_fired();
  now += 120 * kMinute;
  EXPECT_FALSE(dl.fire_if_due());
  dl.adopt(kT0 + 200 * kMinute);
  EXPECT_EQ(dl.deadline_ms(), kT0 + 55 * kMinute);
}

TEST_F(tracker_test, one_read_shortly_before_the_deadline) {
  dl.set_end(kT0 + 60 * kMinute, 3600);
  const std::int64_t deadline = kT0 + 55 * kMinute;
  // A one-node job owns every second: the read falls in the second before the last 20 s.
  const milliseconds wait = dl.wait(true, milliseconds(3600'000));
  EXPECT_GE(wait.count(), deadline - deadline_tracker::kPreDeadlineReadMs - 1000 - now);
  EXPECT_LE(wait.count(), deadline - deadline_tracker::kPreDeadlineReadMs - now);
  EXPECT_FALSE(dl.take_pre_deadline_read());
  now += wait.count();
  EXPECT_TRUE(dl.take_pre_deadline_read());
  EXPECT_FALSE(dl.take_pre_deadline_read()) << "once per deadline";
  EXPECT_EQ(dl.wait(true, milliseconds(3600'000)).count(), deadline - now) << "then the deadline itself";
  // A new deadline gets its own read.
  dl.set_end(kT0 + 90 * kMinute);
  now = kT0 + 85 * kMinute - deadline_tracker::kPreDeadlineReadMs;
  EXPECT_TRUE(dl.take_pre_deadline_read());
}

TEST_F(tracker_test, wait_is_capped_and_none_without_a_deadline) {
  EXPECT_EQ(dl.wait(true, milliseconds(1000)).count(), 1000);
  dl.set_end(kT0 + 60 * kMinute, 3600);
  EXPECT_EQ(dl.wait(false, milliseconds(1000)).count(), 1000);
  EXPECT_EQ(dl.wait(false, milliseconds(3600'000)).count(), 55 * kMinute);
}

TEST_F(tracker_test, reads_come_a_second_after_the_start_then_each_period) {
  dl.schedule_first_read();
  EXPECT_GE(dl.next_read_ms(), kT0 + 1000);
  EXPECT_LT(dl.next_read_ms(), kT0 + 2000);
  dl.schedule_periodic_read();
  EXPECT_GE(dl.next_read_ms(), kT0 + 5 * kMinute / 2);
  EXPECT_LT(dl.next_read_ms(), kT0 + 5 * kMinute / 2 + 5 * kMinute + 2000);
}

}  // namespace
}  // namespace trainctl
