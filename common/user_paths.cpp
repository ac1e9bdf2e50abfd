#include "user_paths.hpp"

#include "env_names.hpp"

namespace trainctl {

std::string user_state_path(const char* override_env, const std::string& leaf, const env_lookup& env) {
  if (!env(override_env).empty()) return env(override_env);
  if (!env(env_var::kXdgStateHome).empty()) return env(env_var::kXdgStateHome) + "/trainctl/" + leaf;
  if (!env(env_var::kHome).empty()) return env(env_var::kHome) + "/.local/state/trainctl/" + leaf;
  return "";
}

std::string bad_nodes_path(const env_lookup& env) {
  return user_state_path(env_var::kTrainctlBadNodes, "bad_nodes", env);
}

std::string job_log_dir(const env_lookup& env) {
  const std::string given = env(env_var::kTrainctlLogDir);
  return !given.empty() ? given : env(env_var::kSlurmSubmitDir);
}

}  // namespace trainctl
