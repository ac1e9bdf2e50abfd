#include "user_paths.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace trainctl;

namespace {
// An environment as the plugin reads the job's (spank_getenv), not this process's.
env_lookup job_env(std::map<std::string, std::string> vars) {
  return [vars](const char* name) {
    const auto it = vars.find(name);
    return it != vars.end() ? it->second : std::string();
  };
}
}  // namespace

TEST(UserPaths, BadNodesFromTheVariableElseTheStateHomeElseHome) {
  EXPECT_EQ(bad_nodes_path(job_env({{"TRAINCTL_BAD_NODES", "/x/bn"}, {"HOME", "/home/me"}})), "/x/bn");
  EXPECT_EQ(bad_nodes_path(job_env({{"XDG_STATE_HOME", "/st"}, {"HOME", "/home/me"}})), "/st/trainctl/bad_nodes");
  EXPECT_EQ(bad_nodes_path(job_env({{"HOME", "/home/me"}})), "/home/me/.local/state/trainctl/bad_nodes");
  EXPECT_EQ(bad_nodes_path(job_env({})), "");
  EXPECT_EQ(user_state_path("TRAINCTL_RUN_EVENTS_DIR", "runs", job_env({{"HOME", "/h"}})),
            "/h/.local/state/trainctl/runs");
}

TEST(UserPaths, TheLogDirectoryIsTheVariableElseTheSubmitDirectory) {
  EXPECT_EQ(job_log_dir(job_env({{"TRAINCTL_LOG_DIR", "/logs"}, {"SLURM_SUBMIT_DIR", "/sub"}})), "/logs");
  EXPECT_EQ(job_log_dir(job_env({{"SLURM_SUBMIT_DIR", "/sub"}})), "/sub");
  EXPECT_EQ(job_log_dir(job_env({})), "");
}
