// trainctl run [options] -- COMMAND...: what trainctl-run does (which stays, since the
// plugin and existing scripts exec it): COMMAND under the supervisor.
#include "run_cli.hpp"
#include "verbs.hpp"

namespace trainctl::cli {

int verb_run(int argc, char** argv) { return commands::run("trainctl run", argc, argv); }

}  // namespace trainctl::cli
