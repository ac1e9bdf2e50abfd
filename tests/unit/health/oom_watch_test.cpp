#include "oom_watch.hpp"

#include <gtest/gtest.h>

using namespace trainctl;

// The count the kernel keeps, as a test moves it, and the times of the loop's turns: a
// kill counted before a death names the OOM killer, whether or not a turn came between
// the count and the death being seen (the victim takes a while to exit).
TEST(OomWatch, ACountThatRoseBeforeTheDeathIsTheOomKillers) {
  std::optional<std::uint64_t> count = 3;
  oom_watch w([&] { return count; }, 0);
  for (std::int64_t t = 1000; t <= 20000; t += 1000) w.sample(t);
  EXPECT_EQ(w.oom_killed(20500), 0) << "nothing killed: a SIGKILL from outside";
  count = 4;        // the OOM killer picked a process at 20.6 s
  w.sample(21000);  // turns before its death was seen
  w.sample(22000);
  EXPECT_EQ(w.oom_killed(22600), 1);  // compared with the count at 12 s
  EXPECT_EQ(w.oom_killed(3000), 1) << "a death in the first seconds compares with the first count";
  for (std::int64_t t = 23000; t <= 40000; t += 1000) w.sample(t);
  EXPECT_EQ(w.oom_killed(40000), 0) << "a later death compares with a later count: the old kill names nothing";
}

TEST(OomWatch, ACountThatCannotBeReadIsNotKnown) {
  std::optional<std::uint64_t> count;
  oom_watch w([&] { return count; }, 0);
  EXPECT_EQ(w.oom_killed(5000), -1) << "no count before the death to compare with";
  count = 1;
  w.sample(6000);
  EXPECT_EQ(w.oom_killed(5000), -1) << "the only count came after the death";
  EXPECT_EQ(w.oom_killed(9000), 0);
  count.reset();
  EXPECT_EQ(w.oom_killed(9000), -1);
}
