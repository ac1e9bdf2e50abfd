#include "slurm_job.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "parse.hpp"

using namespace trainctl;

TEST(SlurmJob, Durations) {
  EXPECT_EQ(parse_slurm_duration("UNLIMITED"), -1);
  EXPECT_EQ(parse_slurm_duration("30"), 30 * 60);
  EXPECT_EQ(parse_slurm_duration("10:30"), 10 * 60 + 30);
  EXPECT_EQ(parse_slurm_duration("01:00:05"), 3605);
  EXPECT_EQ(parse_slurm_duration("2-00"), 2 * 86400);
  EXPECT_EQ(parse_slurm_duration("2-12:30"), 2 * 86400 + 12 * 3600 + 30 * 60);
  EXPECT_EQ(parse_slurm_duration("365-00:00:00"), 365LL * 86400);
  for (const char* bad : {"", "x", "1:2:3:4", "-5", "1-", "a-1"})
    EXPECT_THROW(parse_slurm_duration(bad), parse_error) << bad;
}

TEST(SlurmJob, TimestampsAreLocalTime) {
  setenv("TZ", "UTC", 1);
  EXPECT_EQ(parse_slurm_timestamp("2026-11-22T07:22:34"), 1795332154000LL);
  EXPECT_EQ(parse_slurm_timestamp("Unknown"), 0);
  EXPECT_EQ(parse_slurm_timestamp("None"), 0);
  EXPECT_THROW(parse_slurm_timestamp("2026-11-22 07:22:34"), parse_error);
  EXPECT_THROW(parse_slurm_timestamp("2026-11-22T07:22:34Z"), parse_error);
}

TEST(SlurmJob, ScontrolLine) {
  setenv("TZ", "UTC", 1);
  const std::string line =
      "JobId=10 JobName=wrap UserId=root(0) JobState=RUNNING Reason=None Requeue=1 Restarts=0 "
      "TimeLimit=00:03:00 StartTime=2026-11-22T07:19:34 EndTime=2026-11-22T07:22:34 PreemptTime=None "
      "Command=(null) WorkDir=/work/main with spaces";
  auto jt = parse_scontrol_job(line);
  ASSERT_TRUE(jt);
  EXPECT_EQ(jt->end_ms, 1795332154000LL);
  EXPECT_EQ(jt->limit_s, 180);
  EXPECT_FALSE(jt->preempting);
  EXPECT_TRUE(jt->requeue);
  EXPECT_EQ(jt->state, "RUNNING");
  auto pre = parse_scontrol_job("JobId=3 EndTime=2026-11-22T07:22:34 PreemptTime=2026-11-22T07:21:04 Requeue=0");
  ASSERT_TRUE(pre);
  EXPECT_TRUE(pre->preempting);
  EXPECT_FALSE(pre->requeue);
  EXPECT_FALSE(parse_scontrol_job("slurm_load_jobs error: Invalid job id specified"));
  EXPECT_FALSE(parse_scontrol_job("JobId=3 EndTime=garbage"));
  EXPECT_FALSE(parse_scontrol_job("JobId=3 JobState=RUNNING")) << "no EndTime: not a usable record";
}
