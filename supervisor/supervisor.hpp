// The supervisor: the process SLURM signals for one task. It runs the command (a
// launcher such as torchrun, or the rank itself) shielded from the notice signals,
// relays every notice to the rank processes (as a signal and through the node state),
// tracks the deadline EndTime - graceful exit, publishes the switch files, and
// forwards the command's exit status. `trainctl-run` and the SPANK plugin both run it.
#pragma once

#include <sys/types.h>

#include <string>

#include "run_options.hpp"

namespace trainctl {

// Runs `argv` (argv[0] looked up in PATH) under supervision and returns what this
// process should exit with. With `adopt` > 0 the command already runs as that child;
// `run_id_fd` >= 0: the run id it waits for goes there (a line), then it is closed.
int run_supervised(const supervisor_options& opts, char* const* argv, pid_t adopt = 0, int run_id_fd = -1);

// Exits this process the way the command ended: its exit code, or the same signal.
[[noreturn]] void exit_like(int wait_status);

}  // namespace trainctl
