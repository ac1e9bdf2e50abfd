#include "user_paths.hpp"

namespace trainctl {

std::string user_state_path(const char* override_env, const std::string& leaf, const env_lookup& env) {
  if (!env(override_env).empty()) return env(override_env);
  if (!env("XDG_STATE_HOME").empty()) return env("XDG_STATE_HOME") + "/trainctl/" + leaf;
  if (!env("HOME").empty()) return env("HOME") + "/.local/state/trainctl/" + leaf;
  return "";
}

std::string bad_nodes_path(const env_lookup& env) { return user_state_path("TRAINCTL_BAD_NODES", "bad_nodes", env); }

std::string job_log_dir(const env_lookup& env) {
  const std::string given = env("TRAINCTL_LOG_DIR");
  return !given.empty() ? given : env("SLURM_SUBMIT_DIR");
}

}  // namespace trainctl
