#include "job_access.hpp"

#include <gtest/gtest.h>

#include <string>

using trainctl::commands::record_to_look_inside;

namespace {
// `scontrol show job -o` lines, trimmed to the fields a verb reads.
const std::string kRunningTask =
    "JobId=2616 ArrayJobId=2613 ArrayTaskId=3 JobName=train UserId=alice(1001) JobState=RUNNING Reason=None "
    "NodeList=n[1-2] NumNodes=2\n";
const std::string kPendingRest =
    "JobId=2613 ArrayJobId=2613 ArrayTaskId=4-10%1 JobName=train UserId=alice(1001) JobState=PENDING "
    "Reason=JobArrayTaskLimit NodeList=(null) NumNodes=2\n";
}  // namespace

TEST(JobAccess, AnArraysIdMeansItsOneRunningTask) {
  std::string why;
  // scontrol lists the pending rest first or last depending on the release.
  for (const auto& output : {kPendingRest + kRunningTask, kRunningTask + kPendingRest}) {
    const auto r = record_to_look_inside(output, &why);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->id, "2616");
    EXPECT_EQ(r->state, "RUNNING");
    EXPECT_EQ(r->node_list, "n[1-2]");
  }
}

TEST(JobAccess, AJobOrAnArrayWithNothingRunningIsItsRecord) {
  std::string why;
  const auto pending = record_to_look_inside(kPendingRest, &why);
  ASSERT_TRUE(pending);
  EXPECT_EQ(pending->state, "PENDING");  // the caller says it is not running, and why
  const auto one = record_to_look_inside(kRunningTask, &why);
  ASSERT_TRUE(one);
  EXPECT_EQ(one->id, "2616");
}

TEST(JobAccess, SeveralRunningTasksAreNamedNotGuessed) {
  std::string other = kRunningTask;
  other.replace(other.find("JobId=2616"), 10, "JobId=2617");
  std::string why;
  EXPECT_FALSE(record_to_look_inside(kRunningTask + other + kPendingRest, &why));
  EXPECT_EQ(why, "2 of its tasks run (jobs 2616 2617)");
  EXPECT_FALSE(record_to_look_inside("", &why));
  EXPECT_EQ(why, "scontrol showed no job record");
}
