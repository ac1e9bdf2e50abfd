// trainctl drill [--json] [--keep] SCRIPT [sbatch options]: rehearses every failure trainctl
// handles on the user's own script, on the real cluster, in a few minutes.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "commands.hpp"
#include "parse.hpp"
#include "verb_args.hpp"
#include "verbs.hpp"

namespace trainctl::cli {

int verb_drill(int argc, char** argv) {
  // drill's own options come before SCRIPT; every word after it is sbatch's.
  const int script_at = script_position(argc, argv, {"--start-timeout"});
  CLI::App app{
      "Rehearses the failures of a long run on your own batch script before it: submits it as a short two-task "
      "array (its own options, under the job name NAME-drill, with CKPT_DIR, LOG_DIR and TRAINCTL_LOG_DIR in a "
      "directory of its own) and, in order: touches the save switch; stops one rank past the hang timeout (30s for "
      "the drill where the script's is longer than 1m and can be set: the plugin's option, or the template's "
      "HANG_TIMEOUT), then resumes it; lets the graceful exit's deadline come; checks that task 2 resumes after "
      "the last complete save; kills a rank in task 2. Prints each event: what should happen, what happened, "
      "how long it took; then advice from what it measured (the graceful exit, the hang timeout per phase), "
      "which it keeps where --graceful-exit=auto and --hang-timeout=auto of jobs with the script's name read "
      "it. Exit status 0: ready; 1: something to fix (its files are kept then), or a script that does not run "
      "under trainctl; 2: it could not drill (no such script, not a batch script, options it cannot read, no "
      "cluster reachable).",
      "trainctl drill"};
  std::string script;
  std::vector<std::string> sbatch_shown;
  bool json = false, keep = false;
  app.add_option("SCRIPT", script, "the batch script, as you would give it to sbatch");
  app.add_option("SBATCH_OPTIONS", sbatch_shown,
                 "after SCRIPT: the sbatch options you would submit it with; the drill sets --array, --time, "
                 "--job-name and --output itself");
  app.add_flag("--json", json, "the events and the verdict as one JSON document (schema 1)");
  app.add_flag("--keep", keep,
               "keep the drill's checkpoints, logs and stacks (they are kept anyway when it finds "
               "something to fix)");
  std::string start = "5m";
  app.add_option("--start-timeout", start,
                 "how long task 1 may run before rank 0's first check() (model loading, compiling) before the drill "
                 "calls it a loop that never checks (default 5m)");
  if (const auto done = parse_verb(app, std::min(argc, script_at + 1), argv, "drill")) return *done;
  std::chrono::milliseconds start_timeout{0};
  try {
    start_timeout = parse_duration(start, 'm');
  } catch (const parse_error& e) {
    std::fprintf(stderr, "trainctl drill: --start-timeout: %s\n", e.what());
    return 2;
  }
  if (script.empty()) {
    std::fprintf(stderr, "trainctl drill: no SCRIPT; accepted: trainctl drill SCRIPT [sbatch options]\n");
    return 2;
  }
  const std::vector<std::string> sbatch(argv + std::min(argc, script_at + 1), argv + argc);
  return commands::drill_batch_script("trainctl", script, sbatch, keep, json, start_timeout);
}

}  // namespace trainctl::cli
