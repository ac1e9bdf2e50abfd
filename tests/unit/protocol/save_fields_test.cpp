// A rank's saves and commits with both sides in one test: its controller writes what it
// was asked for, committed and still writes; the supervisor reads them.
#include "save_fields.hpp"

#include <gtest/gtest.h>

#include <memory>

using namespace trainctl;

TEST(SaveFields, WhatWasAskedAndCommittedIsWhatTheSupervisorReads) {
  auto ns = std::make_unique<node_state>();
  rank_beat& b = ns->beats[0];
  EXPECT_EQ(save_fields::read(b).asked_step, -1) << "none yet";
  EXPECT_EQ(save_fields::read(b).committed_step, -1);
  save_fields::asked(b, 0, 1000);
  EXPECT_EQ(save_fields::read(b).asked_step, 0) << "step 0 is a step";
  EXPECT_EQ(save_fields::read(b).asked_ms, 1000);
  save_fields::committed(b, 200, 5000);
  save_fields::committed(b, 100, 6000);  // an older asynchronous write that ended late
  EXPECT_EQ(save_fields::read(b).committed_step, 200) << "never moved back";
}

TEST(SaveFields, PendingWritesAndTheWaitAtTheEnd) {
  auto ns = std::make_unique<node_state>();
  rank_beat& b = ns->beats[0];
  save_fields::pending(b, 2, 300, 9000);
  save_fields::waiting(b, true);
  save_fields::save_view v = save_fields::read(b);
  EXPECT_EQ(v.pending, 2);
  EXPECT_EQ(v.pending_step, 300);
  EXPECT_EQ(v.pending_ms, 9000);
  EXPECT_TRUE(v.waiting);
  EXPECT_TRUE(save_fields::sane(b));
  save_fields::pending(b, 0, 300, 9000);
  save_fields::waiting(b, false);
  v = save_fields::read(b);
  EXPECT_EQ(v.pending, 0);
  EXPECT_EQ(v.pending_step, -1) << "none pending: no step";
  EXPECT_FALSE(v.waiting);
}
