// trainctl-run's command line, also `trainctl run`: parses the options, then runs the
// command under the supervisor (and does not return), or answers one of the old
// one-shot flags (--dump-stacks, --bad-nodes, --mark-bad-node) and returns its status.
#pragma once
#include <string>

namespace trainctl::commands {

// `program` names it in --help, --version and every error ("trainctl-run", "trainctl run").
int run(const std::string& program, int argc, char** argv);

}  // namespace trainctl::commands
