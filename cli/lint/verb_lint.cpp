// trainctl lint [--json] [--collective-timeout=DURATION] SCRIPT [sbatch options]: what in a
// batch script would lose work the night it is preempted, checked against the cluster and
// the script's earlier runs. Exit 0: nothing found; 1: problems, one line each; 2: it
// could not lint (no such script, not a batch script, no cluster).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "commands.hpp"
#include "lint_rules.hpp"
#include "parse.hpp"
#include "verb_args.hpp"
#include "verbs.hpp"

namespace trainctl::cli {

int verb_lint(int argc, char** argv) {
  // lint's own options come before SCRIPT; every word after it is sbatch's.
  const int script_at = script_position(argc, argv, {"--collective-timeout"});
  std::string rules_text = "Rules (a finding ends with its name):\n";
  for (const lint_rule& r : lint_rules()) rules_text += "  " + std::string(r.name) + ": " + r.checks + "\n";
  // In --help (and so trainctl-lint(1), which help2man makes from it) one paragraph each.
  std::string rules_help = "Rules (a finding ends with its name):\n";
  for (const lint_rule& r : lint_rules()) rules_help += "\n  " + std::string(r.name) + ": " + r.checks + "\n";
  CLI::App app{
      "Checks a batch script before its long run: reads its #SBATCH lines and trainctl options (the SPANK plugin's, "
      "or trainctl-run's in the script), the sbatch options given after it, the cluster's preemption and time "
      "limits (scontrol), and what earlier runs of the script measured (your jobs with its job name in the last "
      "90 days: save times, start-up, time between check() calls); prints one line per problem with what to "
      "change. Submits nothing. Exit status 0: nothing found; 1: problems found; 2: it could not lint (no such "
      "script, not a batch script, no cluster reachable).",
      "trainctl lint"};
  app.footer(rules_help);
  std::string script, collective;
  std::vector<std::string> sbatch_shown;
  bool json = false, list = false;
  app.add_option("SCRIPT", script, "the batch script, as you would give it to sbatch");
  app.add_option("SBATCH_OPTIONS", sbatch_shown,
                 "after SCRIPT: the sbatch options you would submit it with (--time=2:00:00 --partition=gpu "
                 "--array=1-10%1); they win over its #SBATCH lines, as sbatch's do");
  app.add_flag("--json", json, "the findings as one JSON document (schema 1)");
  app.add_option("--collective-timeout", collective,
                 "the timeout your init_process_group sets (default: what the script's Python program gives it, "
                 "timeout=timedelta(...), else torch's: 10m for NCCL, 30m for gloo)");
  app.add_flag("--list-rules", list, "print the rules and exit");
  if (const auto done = parse_verb(app, std::min(argc, script_at + 1), argv, "lint")) return *done;
  if (list) {
    std::fputs(rules_text.c_str(), stdout);
    return 0;
  }
  if (script.empty()) {
    std::fprintf(stderr, "trainctl lint: no SCRIPT; accepted: trainctl lint SCRIPT [sbatch options]\n");
    return 2;
  }
  std::int64_t collective_ms = 0;
  if (!collective.empty()) {
    try {
      collective_ms = parse_duration(collective, 'm').count();
    } catch (const parse_error& e) {
      std::fprintf(stderr, "trainctl lint: --collective-timeout: %s\n", e.what());
      return 2;
    }
  }
  const std::vector<std::string> sbatch(argv + std::min(argc, script_at + 1), argv + argc);
  return commands::lint_batch_script("trainctl", script, sbatch, collective_ms, json);
}

}  // namespace trainctl::cli
