// trainctl-run's command line, also `trainctl run`: parses the options, then runs the
// command under the supervisor (and does not return), or answers one of the gone
// one-shot flags (--dump-stacks, --bad-nodes, --mark-bad-node) with the verb that does
// it now, and returns 125.
#pragma once
#include <string>

namespace trainctl::commands {

// `program` names it in --help, --version and every error ("trainctl-run", "trainctl run").
int run(const std::string& program, int argc, char** argv);

}  // namespace trainctl::commands
