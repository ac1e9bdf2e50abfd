#include "run_id.hpp"

#include <gtest/gtest.h>

#include <map>

using namespace trainctl;

namespace {
std::string id_in(const std::map<std::string, std::string>& vars) {
  return run_id([&](const char* name) {
    const auto it = vars.find(name);
    return it == vars.end() ? std::string() : it->second;
  });
}
}  // namespace

// Every task of an array and every requeue (same job id) get one id; the cluster tells
// two clusters' job 4242 apart.
TEST(RunId, TheArrayOrTheJobOnItsCluster) {
  EXPECT_EQ(id_in({{"SLURM_CLUSTER_NAME", "alps"}, {"SLURM_ARRAY_JOB_ID", "4242"}, {"SLURM_JOB_ID", "4250"}}),
            "alps-4242");
  EXPECT_EQ(id_in({{"SLURM_CLUSTER_NAME", "alps"}, {"SLURM_JOB_ID", "4250"}}), "alps-4250");
  EXPECT_EQ(id_in({{"SLURM_JOB_ID", "4250"}}), "4250");
  EXPECT_EQ(id_in({{"SLURM_CLUSTER_NAME", "a b/c"}, {"SLURM_JOB_ID", "4250"}}), "4250")
      << "a cluster name that cannot be part of an id is left out";
  EXPECT_EQ(id_in({}), "") << "outside a SLURM job";
  EXPECT_EQ(id_in({{"SLURM_JOB_ID", "42; rm"}}), "");
}

// A job submitted again goes on as the run it is given.
TEST(RunId, TheUsersOwnWhenItIsOne) {
  EXPECT_EQ(id_in({{"TRAINCTL_RUN_ID", "llama-7b.run-3"}, {"SLURM_JOB_ID", "4250"}}), "llama-7b.run-3");
  EXPECT_EQ(id_in({{"TRAINCTL_RUN_ID", "has space"}, {"SLURM_JOB_ID", "4250"}}), "4250");
  EXPECT_EQ(id_in({{"TRAINCTL_RUN_ID", std::string(65, 'a')}, {"SLURM_JOB_ID", "4250"}}), "4250");
  EXPECT_TRUE(valid_run_id(std::string(64, 'a')));
  EXPECT_FALSE(valid_run_id(""));
  EXPECT_FALSE(valid_run_id("a/b"));
}
