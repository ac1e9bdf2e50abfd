// The once-markers (supervisor/once_markers): won once per node, across processes, and
// removed by the node state's sweep when their job ends or a week has passed.
#include "once_markers.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "fixture.hpp"
#include "node_state.hpp"
#include "state_dir.hpp"

using namespace trainctl;
using trainctl_test::temp_dir;

// --on-notice runs once per notice and job though every supervisor on the node sees it.
TEST(NodeStateSafety, AClaimIsWonOnceAndSweptOnlyWhenAWeekOld) {
  temp_dir t;
  setenv("TRAINCTL_SHM_DIR", t.path().c_str(), 1);
  unsetenv("XDG_RUNTIME_DIR");
  EXPECT_TRUE(claim_once("once.on-notice.7.0.deadline"));
  EXPECT_FALSE(claim_once("once.on-notice.7.0.deadline"));
  EXPECT_TRUE(claim_once("once.on-notice.7.1.deadline")) << "a requeued run claims again";
  EXPECT_EQ(sweep_stale_state(state_dir(), -1), 0) << "claims are kept while their job may run";
  EXPECT_EQ(sweep_stale_state(state_dir(), -8 * 24 * 3600), 2) << "as if a week had passed";
  unsetenv("TRAINCTL_SHM_DIR");
}

// The job epilog (the plugin, as the user) removes the claims of the job that ended on
// the node, and only that job's: job 7's, not job 17's or 70's.
TEST(NodeStateSafety, TheClaimsOfAnEndedJobGoAtItsEnd) {
  temp_dir t;
  setenv("TRAINCTL_SHM_DIR", t.path().c_str(), 1);
  unsetenv("XDG_RUNTIME_DIR");
  for (const char* claim : {"once.on-notice.7.0.1764000000.deadline", "once.on-notice.7.1.1764000100.signal",
                            "once.on-notice.17.7.1764000000.deadline", "once.on-notice.70.0.7.deadline"})
    ASSERT_TRUE(claim_once(claim)) << claim;
  EXPECT_TRUE(claim_of_job("once.on-notice.7.0.1764000000.deadline", "7"));
  EXPECT_FALSE(claim_of_job("once.on-notice.17.7.1764000000.deadline", "7"));
  EXPECT_FALSE(claim_of_job("once.on-notice.70.0.7.deadline", "7"));
  EXPECT_FALSE(claim_of_job("once.on-notice.7", "7"));
  EXPECT_FALSE(claim_of_job("once.on-notice.7.0.deadline", ""));
  EXPECT_EQ(sweep_stale_state(state_dir(), 3600, "7"), 2) << "the ended job's claims go, however young";
  EXPECT_FALSE(was_claimed("once.on-notice.7.0.1764000000.deadline"));
  EXPECT_TRUE(was_claimed("once.on-notice.17.7.1764000000.deadline"));
  EXPECT_TRUE(was_claimed("once.on-notice.70.0.7.deadline"));
  unsetenv("TRAINCTL_SHM_DIR");
}

// Job 17 ended while job 70 of the same user still held /run/trainctl/<uid> on the node:
// its epilog could not sweep. Job 70's epilog, holding the directory alone, removes
// every claim, 17's too, so that the directory can go (a fresh clone's sid lane found
// job 17's claim keeping it).
TEST(NodeStateSafety, AnUnusedDirectoryLosesEveryClaim) {
  temp_dir t;
  setenv("TRAINCTL_SHM_DIR", t.path().c_str(), 1);
  unsetenv("XDG_RUNTIME_DIR");
  for (const char* claim : {"once.on-notice.17.0.1764000000.deadline", "once.held.70.0"})
    ASSERT_TRUE(claim_once(claim)) << claim;
  EXPECT_EQ(sweep_stale_state(state_dir(), 0, "70"), 1) << "without `unused`, only job 70's";
  ASSERT_TRUE(claim_once("once.held.70.0"));
  EXPECT_EQ(sweep_stale_state(state_dir(), 0, "70", true), 2);
  EXPECT_FALSE(was_claimed("once.on-notice.17.0.1764000000.deadline"));
  unsetenv("TRAINCTL_SHM_DIR");
}
