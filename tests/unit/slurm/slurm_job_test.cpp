#include "slurm_job.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "fixture.hpp"
#include "parse.hpp"
#include "slurm_api.hpp"

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
      "TimeLimit=00:03:00 SubmitTime=2026-11-22T07:19:30 StartTime=2026-11-22T07:19:34 EndTime=2026-11-22T07:22:34 "
      "PreemptTime=None "
      "Command=(null) WorkDir=/work/main with spaces";
  auto jt = parse_scontrol_job(line);
  ASSERT_TRUE(jt);
  EXPECT_EQ(jt->end_ms, 1795332154000LL);
  EXPECT_EQ(jt->submit_ms, 1795332154000LL - 184000);
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

// What the libslurm child prints, read back: its own line, its error, and scontrol's line
// after a fallback (with the reason kept for the log).
TEST(SlurmJob, AnswersOfTheLibslurmChild) {
  std::string error, why;
  auto jt = parse_api_output(
      "trainctl-job end=1790000100 start=1790000000 limit=600 preempt=1 requeue=1 submit=1789999990 state=RUNNING\n",
      &error, &why);
  ASSERT_TRUE(jt);
  EXPECT_EQ(jt->end_ms, 1790000100000);
  EXPECT_EQ(jt->start_ms, 1790000000000);
  EXPECT_EQ(jt->submit_ms, 1789999990000);
  EXPECT_EQ(jt->limit_s, 600);
  EXPECT_TRUE(jt->preempting);
  EXPECT_TRUE(jt->requeue);
  EXPECT_EQ(jt->state, "RUNNING");
  EXPECT_TRUE(why.empty());

  EXPECT_FALSE(parse_api_output("trainctl-job-error slurm_load_job 7: Invalid job id specified\n", &error, &why));
  EXPECT_EQ(error, "slurm_load_job 7: Invalid job id specified");

  error.clear();
  jt = parse_api_output("trainctl-job-fallback cannot load libslurm.so.38\nJobId=3 JobState=RUNNING EndTime=Unknown\n",
                        &error, &why);
  ASSERT_TRUE(jt);
  EXPECT_EQ(why, "cannot load libslurm.so.38");
  EXPECT_EQ(jt->end_ms, 0);

  EXPECT_FALSE(parse_api_output("trainctl-job end=x\n", &error, nullptr));
  EXPECT_FALSE(parse_api_output("", &error, nullptr));
}

// Where libslurm is not to be used (or not there), the child execs scontrol: its line
// comes back as the answer.
TEST(SlurmJob, WithoutLibslurmTheChildAsksScontrol) {
  trainctl_test::temp_dir t;
  t.write("bin/scontrol", "#!/bin/sh\necho \"JobId=$4 JobState=RUNNING TimeLimit=00:10:00 EndTime=Unknown\"\n");
  ASSERT_EQ(chmod((t / "bin/scontrol").c_str(), 0755), 0);
  const std::string path = std::getenv("PATH");
  setenv("PATH", (t.path() + "/bin:" + path).c_str(), 1);
  setenv("TRAINCTL_NO_LIBSLURM", "1", 1);
  std::string error;
  const auto jt = query_job("4242", std::chrono::milliseconds(5000), &error);
  unsetenv("TRAINCTL_NO_LIBSLURM");
  setenv("PATH", path.c_str(), 1);
  ASSERT_TRUE(jt) << error;
  EXPECT_EQ(jt->limit_s, 600);
  EXPECT_EQ(jt->state, "RUNNING");
}

// libslurm exits the process (fatal) when it cannot read slurm.conf, after retrying for
// a minute: it runs in a child, so the caller only gets no answer in its deadline.
TEST(SlurmJob, ALibslurmThatCannotReadItsConfigDoesNotTakeTheCallerDown) {
  const char* saved = std::getenv("SLURM_CONF");
  const std::string keep = saved != nullptr ? saved : "";
  setenv("SLURM_CONF", "/nonexistent/slurm.conf", 1);
  std::string error;
  const auto jt = query_job("4242", std::chrono::milliseconds(1500), &error);
  if (saved != nullptr)
    setenv("SLURM_CONF", keep.c_str(), 1);
  else
    unsetenv("SLURM_CONF");
  EXPECT_FALSE(jt);
  EXPECT_FALSE(error.empty());
}

TEST(SlurmJob, AJobIdIsAJobOrOneTaskOfAnArray) {
  for (const char* ok : {"1", "1234", "1234_5", "123456789012", "123456789012_123456789012"})
    EXPECT_TRUE(is_job_id(ok)) << ok;
  for (const char* bad : {"", "abc", "12x", "1234_", "_5", "1234_5_6", "1234_[2-5%1]", "-1", "1234567890123", " 12"})
    EXPECT_FALSE(is_job_id(bad)) << bad;
}

// The breaker cancels the tasks that never ran and spares a task SLURM requeued after a
// preemption; squeue's columns are padded, and only the array's own digits count.
TEST(SlurmJob, PendingTasksByRestarts) {
  std::vector<std::string> never_ran;
  std::string requeued;
  pending_by_restarts(
      "4242                    2                       1           \n"
      "4242                    4                       0           \n"
      "4242                    5                       0           \n"
      "4243                    6                       0           \n"
      "4242                    7;rm                    0           \n"
      "4242                    9                       3           \n",
      "4242", &never_ran, &requeued);
  EXPECT_EQ(never_ran, (std::vector<std::string>{"4242_4", "4242_5"}));
  EXPECT_EQ(requeued, "4242_2 4242_9");
}
