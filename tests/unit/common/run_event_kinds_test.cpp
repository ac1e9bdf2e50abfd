#include "run_event_kinds.hpp"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "run_events.hpp"

using namespace trainctl;

// A kind's name is the file format: the files on users' homes hold these, written by
// every earlier trainctl, and the report reads them back. A rename fails here.
TEST(RunEventKinds, NamesAreTheOnesOnDisk) {
  const std::vector<std::pair<const char*, const char*>> kinds = {{run_event_kind::kFirstStep, "first_step"},
                                                                  {run_event_kind::kSave, "save"},
                                                                  {run_event_kind::kExit, "exit"},
                                                                  {run_event_kind::kSaved, "saved"},
                                                                  {run_event_kind::kRestore, "restore"},
                                                                  {run_event_kind::kCommit, "commit"},
                                                                  {run_event_kind::kWriteCut, "write_cut"},
                                                                  {run_event_kind::kWriteFailed, "write_failed"},
                                                                  {run_event_kind::kStepTimes, "step_times"},
                                                                  {run_event_kind::kEnd, "end"},
                                                                  {run_event_kind::kNotice, "notice"},
                                                                  {run_event_kind::kTaskStart, "task_start"},
                                                                  {run_event_kind::kTaskEnd, "task_end"},
                                                                  {run_event_kind::kCompute, "compute"},
                                                                  {run_event_kind::kDeath, "death"},
                                                                  {run_event_kind::kCommitted, "committed"},
                                                                  {run_event_kind::kUncommitted, "uncommitted"},
                                                                  {run_event_kind::kHeld, "held"}};
  for (const auto& [kind, on_disk] : kinds) EXPECT_EQ(std::string(kind), on_disk);
}

// A made event is read back as what it was made: its kind, job and time, and the fields
// its writer set after.
TEST(RunEventKinds, AMadeEventReadsBack) {
  run_event e = make_run_event(run_event_kind::kTaskEnd, "4242", 1700000000123);
  e.reason = "preempted";
  e.task = 3;
  e.restart = 1;
  e.node = "n2";
  const std::vector<run_event> back = parse_run_events(format_run_event(e));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].what, run_event_kind::kTaskEnd);
  EXPECT_EQ(back[0].job, "4242");
  EXPECT_EQ(back[0].ms, 1700000000123);
  EXPECT_EQ(back[0].reason, "preempted");
  EXPECT_EQ(back[0].task, 3);
  EXPECT_EQ(back[0].restart, 1);
  EXPECT_EQ(back[0].node, "n2");
  EXPECT_EQ(back[0].step, -1) << "a field the writer did not set stays unset";
}
