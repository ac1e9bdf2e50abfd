// Where trainctl keeps a user's files, named one way for every process that names them:
// the supervisor and the library read their own environment (env_text), the SPANK
// plugin the job's (spank_getenv, for the command it starts on 22.05), and both reach
// the same paths.
#pragma once

#include <string>

#include "env.hpp"

namespace trainctl {

// The per-user state `leaf` (a file or directory): the variable `override_env` names it
// when set, else $XDG_STATE_HOME/trainctl/LEAF, else $HOME/.local/state/trainctl/LEAF;
// "" when none of them can be named.
std::string user_state_path(const char* override_env, const std::string& leaf, const env_lookup& env = env_text);

// TRAINCTL_BAD_NODES, else $XDG_STATE_HOME/trainctl/bad_nodes, else
// $HOME/.local/state/trainctl/bad_nodes; "" when none of them can be named.
std::string bad_nodes_path(const env_lookup& env = env_text);

// Where the job's logs, hang stacks and slow_nodes go when --log-dir is not given:
// TRAINCTL_LOG_DIR, else SLURM_SUBMIT_DIR; "" when neither is set.
std::string job_log_dir(const env_lookup& env = env_text);

}  // namespace trainctl
