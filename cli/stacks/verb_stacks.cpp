// trainctl stacks JOB [--log-dir DIR]: every rank's Python and native stacks of a
// running job, and one line saying where most ranks are and which are elsewhere.
#include <CLI/CLI.hpp>

#include <string>

#include "commands.hpp"
#include "verb_args.hpp"
#include "verbs.hpp"

namespace trainctl::cli {

int verb_stacks(int argc, char** argv) {
  CLI::App app{
      "Writes every rank's Python and native stacks of the running job JOB into LOG_DIR/trainctl-USER/stacks-JOB/ "
      "(one task on each of its nodes, beside the running steps; the ranks are not stopped) and says "
      "where most ranks are and which are elsewhere.",
      "trainctl stacks"};
  std::string job, log_dir;
  app.add_option("JOB", job, "the id of a running job of yours")->required()->check(job_id());
  app.add_option("--log-dir", log_dir,
                 "the log directory of trainctl-USER/stacks-JOB/ (default $TRAINCTL_LOG_DIR, else where the job's "
                 "ranks put theirs)");
  bool json = false;
  app.add_flag("--json", json, "the same as one JSON document (each rank's node, directory and frame)");
  if (const auto done = parse_verb(app, argc, argv, "stacks")) return *done;
  return commands::dump_stacks_of_job("trainctl", "stacks", job, log_dir, json);
}

}  // namespace trainctl::cli
