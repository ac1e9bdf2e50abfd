#include "oom_watch.hpp"

#include <gtest/gtest.h>

using namespace trainctl;

// The count the kernel keeps, as a test moves it: a kill between two turns of the
// supervisor's loop names the OOM killer for a death seen after it, until the next turn.
TEST(OomWatch, ACountThatRoseSinceTheLastTurnIsTheOomKillers) {
  std::optional<std::uint64_t> count = 3;
  oom_watch w([&] { return count; });
  EXPECT_EQ(w.oom_killed(), 0) << "nothing killed since the first count: a SIGKILL from outside";
  count = 4;  // the OOM killer ended a process, then signalled it
  EXPECT_EQ(w.oom_killed(), 1);
  w.sample();
  EXPECT_EQ(w.oom_killed(), 0) << "the next turn took the count: an older kill names no later death";
}

TEST(OomWatch, ACountThatCannotBeReadIsNotKnown) {
  std::optional<std::uint64_t> count;
  oom_watch w([&] { return count; });
  EXPECT_EQ(w.oom_killed(), -1);
  count = 1;
  EXPECT_EQ(w.oom_killed(), -1) << "no count before the death to compare with";
  w.sample();
  count.reset();
  EXPECT_EQ(w.oom_killed(), -1);
}
