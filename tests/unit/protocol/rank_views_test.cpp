// The node state's rank slots read from outside the rank: the newest process's slot of
// each rank, the fields as a rank's controller stores them (both sides in the test).
#include "rank_views.hpp"

#include <gtest/gtest.h>

#include <memory>

namespace trainctl {
namespace {

// What a rank's controller stores in its slot at a check() (and at a save's commit).
void check_in(rank_beat& b, std::int32_t pid, std::int32_t rank, std::int64_t step, std::int64_t beat_ms) {
  b.pid.store(pid, std::memory_order_relaxed);
  b.step.store(step, std::memory_order_relaxed);
  b.step_us.store(50'000, std::memory_order_relaxed);
  b.rank.store(rank, std::memory_order_release);
  b.beat_ms.store(beat_ms, std::memory_order_release);
}

void commit(rank_beat& b, std::int64_t step, std::int64_t ms) {
  b.saves.committed_ms.store(ms, std::memory_order_relaxed);
  b.saves.committed_step1.store(step + 1, std::memory_order_release);
}

TEST(RankViews, EachRanksNewestProcessByRank) {
  auto ns = std::make_unique<node_state>();
  check_in(ns->beats[0], 100, 1, 40, 5'000);  // rank 1's first process, restarted since
  commit(ns->beats[0], 30, 4'000);
  check_in(ns->beats[1], 200, 0, 90, 9'000);
  check_in(ns->beats[2], 300, 1, 80, 9'500);  // rank 1 again: its newest process
  ns->beats[3].pid.store(400);                // claimed, never checked in: no rank yet
  ns->beats[2].saves.pending.store(1);
  ns->beats[2].saves.pending_step1.store(71);
  ns->beats[2].saves.pending_ms.store(8'000);
  const std::vector<rank_view> v = newest_rank_views(*ns);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].rank, 0);
  EXPECT_EQ(v[0].step, 90);
  EXPECT_EQ(v[0].committed_step, -1) << "no save committed";
  EXPECT_EQ(v[0].pending_step, -1);
  EXPECT_EQ(v[1].rank, 1);
  EXPECT_EQ(v[1].pid, 300) << "the newest process's slot, not the restarted one's";
  EXPECT_EQ(v[1].step, 80);
  EXPECT_EQ(v[1].step_us, 50'000);
  EXPECT_EQ(v[1].committed_step, -1) << "the old process's commit is not the new one's";
  EXPECT_EQ(v[1].pending_step, 70);
  EXPECT_EQ(v[1].pending_ms, 8'000);
}

TEST(RankViews, AnAllZeroSlotIsNoRankZero) {
  auto ns = std::make_unique<node_state>();
  EXPECT_TRUE(newest_rank_views(*ns).empty());
}

}  // namespace
}  // namespace trainctl
