// The deadline's fields with both sides in one test: the supervisor that publishes, the
// ranks that learn a later EndTime from the agreement, the readers.
#include "deadline_fields.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

using namespace trainctl;

namespace {
constexpr std::int64_t kNow = 1796225154000;  // unix ms
constexpr std::int64_t kMinute = 60000;

std::unique_ptr<node_state> fresh_state() {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  return ns;
}
}  // namespace

TEST(DeadlineFields, TheSupervisorsReadIsWhatEveryReaderSees) {
  auto ns = fresh_state();
  EXPECT_EQ(deadline_fields::deadline_ms(*ns), 0) << "none yet";
  const std::uint32_t seq = ns->seq.load();
  ASSERT_TRUE(deadline_fields::publish(*ns, kNow + 50 * kMinute, {kNow + 60 * kMinute, kNow}));
  EXPECT_EQ(deadline_fields::deadline_ms(*ns), kNow + 50 * kMinute);
  EXPECT_EQ(deadline_fields::end_time(*ns).end_ms, kNow + 60 * kMinute);
  EXPECT_EQ(deadline_fields::end_time(*ns).read_ms, kNow);
  EXPECT_GT(ns->seq.load(), seq) << "a change bumps seq, which wakes the watchers";
  EXPECT_TRUE(deadline_fields::sane(*ns));
}

// The TimeLimit was raised; node 2's supervisor read it first, and the agreement brought
// it to node 1, whose supervisor is stopped: node 1's deadline moves by as much as the
// EndTime did, and node 1's supervisor, waking with its older read, cannot put it back.
TEST(DeadlineFields, ALaterEndTimeFromTheRanksMovesTheDeadlineAndAnOlderReadCannotUndoIt) {
  auto ns = fresh_state();
  ASSERT_TRUE(deadline_fields::publish(*ns, kNow + 50 * kMinute, {kNow + 60 * kMinute, kNow}));
  std::int64_t was = 0;
  ASSERT_TRUE(deadline_fields::learn(*ns, {kNow + 90 * kMinute, kNow + 5000}, kNow + 6000, &was));
  EXPECT_EQ(was, kNow + 60 * kMinute);
  EXPECT_EQ(deadline_fields::deadline_ms(*ns), kNow + 80 * kMinute) << "moved 30 minutes, as EndTime did";
  EXPECT_EQ(deadline_fields::end_time(*ns).end_ms, kNow + 90 * kMinute);
  EXPECT_FALSE(deadline_fields::publish(*ns, kNow + 50 * kMinute, {kNow + 60 * kMinute, kNow + 1000}))
      << "the stopped supervisor's older read of the old EndTime";
  EXPECT_EQ(deadline_fields::deadline_ms(*ns), kNow + 80 * kMinute);
  EXPECT_TRUE(deadline_fields::publish(*ns, kNow + 80 * kMinute, {kNow + 90 * kMinute, kNow + 9000}))
      << "its own later read of the same EndTime";
}

TEST(DeadlineFields, WhatIsNoNews) {
  auto ns = fresh_state();
  EXPECT_FALSE(deadline_fields::learn(*ns, {kNow + 90 * kMinute, kNow}, kNow))
      << "no EndTime on this node (no supervisor): no graceful exit to keep";
  ASSERT_TRUE(deadline_fields::publish(*ns, kNow + 50 * kMinute, {kNow + 60 * kMinute, kNow}));
  EXPECT_FALSE(deadline_fields::learn(*ns, {kNow + 90 * kMinute, kNow + 400}, kNow + 1000)) << "not read later";
  EXPECT_FALSE(deadline_fields::learn(*ns, {kNow + 60 * kMinute + 300, kNow + 5000}, kNow + 6000))
      << "the same EndTime, to the second";
  EXPECT_FALSE(deadline_fields::learn(*ns, {kNow + 90 * kMinute, kNow + 2 * kMinute}, kNow))
      << "read in the future: a damaged state's";
  EXPECT_EQ(deadline_fields::deadline_ms(*ns), kNow + 50 * kMinute);
}

// Every rank of a node learns the same news from one agreement: one of them takes it,
// and the deadline moves once, not once per rank.
TEST(DeadlineFields, RanksRacingWithTheSameNewsMoveTheDeadlineOnce) {
  auto ns = fresh_state();
  ASSERT_TRUE(deadline_fields::publish(*ns, kNow + 50 * kMinute, {kNow + 60 * kMinute, kNow}));
  std::atomic<int> took{0};
  std::vector<std::thread> ranks;
  for (int r = 0; r < 8; ++r)
    ranks.emplace_back([&] {
      if (deadline_fields::learn(*ns, {kNow + 70 * kMinute, kNow + 5000}, kNow + 6000)) ++took;
    });
  for (auto& t : ranks) t.join();
  EXPECT_EQ(took.load(), 1);
  EXPECT_EQ(deadline_fields::deadline_ms(*ns), kNow + 60 * kMinute);
}

TEST(DeadlineFields, APublishersOwnDeadlineAndADamagedOne) {
  auto ns = fresh_state();
  deadline_fields::set_deadline(*ns, kNow);
  EXPECT_EQ(deadline_fields::deadline_ms(*ns), kNow);
  ns->deadline_ms.store(-5);  // what a damaged file may hold
  EXPECT_FALSE(deadline_fields::sane(*ns));
}
