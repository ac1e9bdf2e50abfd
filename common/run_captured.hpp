// Running a helper command (scontrol, squeue, a quota command) with its output
// captured and a timeout, so that a slow or dead service never hangs the caller.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace trainctl {

// Runs argv (looked up in PATH) with stdout captured (stderr discarded), under a
// timeout; true when it exited 0. `error` says why not, in one line.
bool run_captured(const std::vector<std::string>& argv, std::chrono::milliseconds timeout, std::string* out,
                  std::string* error);

}  // namespace trainctl
