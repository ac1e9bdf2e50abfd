#include "supervised_step.hpp"

#include <map>
#include <string>

#include <gtest/gtest.h>

using namespace trainctl;

namespace {

// An environment given as a table: the test states it instead of changing the process's.
std::function<std::string(const char*)> env_of(std::map<std::string, std::string> vars) {
  return [vars](const char* name) {
    const auto it = vars.find(name);
    return it == vars.end() ? std::string() : it->second;
  };
}

}  // namespace

TEST(SupervisedStep, NamesTheBatchStepByItsJobAndOtherStepsByJobAndStep) {
  EXPECT_EQ(supervised_step(env_of({{"SLURM_JOB_ID", "812"}})), "812") << "what a batch script compares with";
  EXPECT_EQ(supervised_step(env_of({{"SLURM_JOB_ID", "812"}, {"SLURM_STEP_ID", "0"}})), "812.0");
  EXPECT_EQ(supervised_step(env_of({{"SLURM_JOB_ID", "812"}, {"SLURM_STEP_ID", "-5"}})), "812")
      << "SLURM 26.05's batch step: SLURM_BATCH_SCRIPT's id, signed";
  EXPECT_EQ(supervised_step(env_of({{"SLURM_JOB_ID", "812"}, {"SLURM_STEP_ID", "4294967291"}})), "812");
  EXPECT_EQ(supervised_step(env_of({})), "local");
}

TEST(SupervisedStep, ASecondTrainctlRunInTheSameStepPassesItsCommandOn) {
  EXPECT_EQ(nesting_of(env_of({{"SLURM_JOB_ID", "812"}})), nesting::supervise);
  EXPECT_EQ(nesting_of(env_of({{"SLURM_JOB_ID", "812"}, {kSupervisedVar, "812"}})), nesting::pass_on);
}

TEST(SupervisedStep, AnotherJobsOrStepsSupervisorIsNotThisOnes) {
  // sbatch from inside job 812 hands its environment to job 813.
  EXPECT_EQ(nesting_of(env_of({{"SLURM_JOB_ID", "813"}, {kSupervisedVar, "812"}})), nesting::supervise);
  // srun inside the batch step: a step of its own, with its own supervisor.
  EXPECT_EQ(nesting_of(env_of({{"SLURM_JOB_ID", "812"}, {"SLURM_STEP_ID", "0"}, {kSupervisedVar, "812"}})),
            nesting::supervise);
  EXPECT_EQ(nesting_of(env_of({{"SLURM_JOB_ID", "812"}, {kSupervisedVar, "1"}})), nesting::supervise)
      << "the value an older supervisor set names no step";
}

TEST(SupervisedStep, ThePassedOnCommandStartingItAgainIsALoop) {
  EXPECT_EQ(nesting_of(env_of({{"SLURM_JOB_ID", "812"}, {kSupervisedVar, "812"}, {kPassedOnVar, "812"}})),
            nesting::loop);
  EXPECT_EQ(nesting_of(env_of({{"SLURM_JOB_ID", "813"}, {kSupervisedVar, "813"}, {kPassedOnVar, "812"}})),
            nesting::pass_on)
      << "a mark another job handed on is not this step's";
}
