#include "save_commits.hpp"

#include <gtest/gtest.h>

#include "run_events.hpp"

using namespace trainctl;

namespace {
rank_save rank(std::int32_t r, std::int64_t asked, std::int64_t committed, std::int64_t after_ms = 0) {
  return rank_save{r, asked, 1'000'000, committed, committed >= 0 ? 1'000'000 + after_ms : 0};
}
}  // namespace

// A loop that never calls saved() is no evidence of a save that did not commit.
TEST(SaveCommits, NothingToSayWithoutAnAskOrAnyCommit) {
  EXPECT_FALSE(judge_save_commits({rank(0, 1450, -1), rank(1, 1450, -1)})) << "the loop does not call saved()";
  EXPECT_FALSE(judge_save_commits({rank(0, -1, -1)})) << "no save asked";
  EXPECT_FALSE(judge_save_commits({}));
}

TEST(SaveCommits, EveryRankCommittedTheSaveAsked) {
  const auto c = judge_save_commits({rank(1, 1450, 1450, 2100), rank(0, 1450, 1450, 1800)});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->step, 1450);
  EXPECT_TRUE(c->missed.empty());
  EXPECT_EQ(c->slowest_ms, 2100);
  EXPECT_EQ(save_commits_line(*c, "n1"),
            "the save at step 1450 is committed by every rank on n1 (0,1), the last 2.1 s after it was asked");
  EXPECT_EQ(save_commits_events(*c, "42", "n1", 5000), "5000 job=42 committed step=1450 ms=2100 node=n1 ranks=2\n");
}

// Rank 3's save raised at the deadline: it committed the save before, not this one.
TEST(SaveCommits, ARankThatDidNotCommitIsNamedWithItsLastCommit) {
  const auto c = judge_save_commits({rank(2, 1450, 1450, 900), rank(3, 1450, 1200), rank(4, 1450, -1)});
  ASSERT_TRUE(c);
  ASSERT_EQ(c->missed.size(), 2u);
  EXPECT_EQ(
      save_commits_line(*c, "n2"),
      "the save at step 1450 is not committed by ranks 3 (its last committed save in this run: step 1200), 4 (no "
      "save committed in this run) on n2; committed by 2: trainctl.resume_path goes back to the newest save every "
      "rank committed");
  const auto events = parse_run_events(save_commits_events(*c, "42", "n2", 5000));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].what, "uncommitted");
  EXPECT_EQ(events[1].figure("rank"), 3);
  EXPECT_EQ(events[1].figure("last"), 1200);
  EXPECT_EQ(events[2].figure("last"), -1) << "none in this run";
  EXPECT_EQ(events[2].node, "n2");
}

// A rank that died before the decision was asked for nothing; it did not commit the
// save the others were asked for. A save of the loop's own after trainctl's holds it.
TEST(SaveCommits, JudgedAgainstTheSaveEveryRankWasAskedFor) {
  const auto c = judge_save_commits({rank(0, 1450, 1450), rank(1, 1200, 1200), rank(2, 1450, 1500)});
  ASSERT_TRUE(c);
  ASSERT_EQ(c->missed.size(), 1u);
  EXPECT_EQ(c->missed[0].rank, 1);
  EXPECT_EQ(c->done.size(), 2u);
}

// An asynchronous save's write still pending as the run ended (the time limit's kill, a
// preemption's end) is named with its rank and how long it had been written, as a
// run event for the report; the save is not committed.
TEST(SaveCommits, AWriteTheRunsEndCutIsNamed) {
  rank_save cut = rank(1, 1450, 1200);
  cut.pending_step = 1450;
  cut.pending_ms = 1'000'000;
  const auto c = judge_save_commits({rank(0, 1450, 1450, 900), cut});
  ASSERT_TRUE(c);
  ASSERT_EQ(c->cut.size(), 1u);
  EXPECT_EQ(cut_writes_line(*c, "n2", 1'094'500),
            "the run ended while a write was still pending on n2 (rank 1: the save at step 1450, 94.5 s after its "
            "save began): cut, not committed; trainctl.resume_path goes back to the newest save every rank "
            "committed");
  const auto events = parse_run_events(save_commits_events(*c, "42", "n2", 1'094'500));
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[2].what, "write_cut");
  EXPECT_EQ(events[2].step, 1450);
  EXPECT_EQ(events[2].took_ms, 94'500);
  EXPECT_EQ(events[2].figure("rank"), 1);
  // A write cut before any commit of the run is still said (there is no save to judge).
  rank_save first = rank(1, 1450, -1);
  first.pending_step = 1450;
  first.pending_ms = 1'000'000;
  const auto alone = judge_save_commits({first});
  ASSERT_TRUE(alone);
  EXPECT_EQ(save_commits_line(*alone, "n2"), "");
  EXPECT_NE(cut_writes_line(*alone, "n2", 1'094'500), "");
  EXPECT_EQ(parse_run_events(save_commits_events(*alone, "42", "n2", 1'094'500)).size(), 1u);
  EXPECT_EQ(cut_writes_line(*judge_save_commits({rank(0, 1450, 1450)}), "n1", 0), "") << "nothing cut";
}
