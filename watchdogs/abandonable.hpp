// Running a blocking call (statfs on a network mount, a quota command) where it can be
// abandoned: in a child process, with a deadline. A process stuck in the kernel on a
// dead mount cannot be killed, so the caller never waits for it: past the deadline the
// answer is "could not tell" and the child is left to the kernel.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

namespace trainctl {

// Runs `work` in a forked child; what it returns is passed back through a pipe.
// nullopt when the deadline passed or the child died.
std::optional<std::string> run_abandonable(const std::function<std::string()>& work,
                                           std::chrono::milliseconds deadline);

}  // namespace trainctl
