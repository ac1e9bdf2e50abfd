// Default switch paths, shared by trainctl-run and the SPANK plugin so that a teammate
// finds the same file either way: <submit dir>/kill-switch-<job name> (and
// save-switch-...), one per job name so that every task of an array and every
// resubmission of the same job obeys one switch.
#pragma once

#include <string>

namespace trainctl {

// `submit_dir` empty: the current directory; `job_name` empty: "trainctl".
std::string default_switch_path(const std::string& kind, const std::string& submit_dir, const std::string& job_name);

}  // namespace trainctl
