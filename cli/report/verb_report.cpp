// trainctl report JOB [--svg FILE | --no-svg] [--json | --format=FORMAT]: where the node-hours of a job
// array (or one job) went, what each interruption cost, its goodput, and its timeline as a picture.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "commands.hpp"
#include "verb_args.hpp"
#include "verbs.hpp"

namespace trainctl::cli {

int verb_report(int argc, char** argv) {
  CLI::App app{
      "Reports where the node-hours of JOB (a job array, one of its tasks, or one job) went: for each task its queue "
      "wait, start-up to the first step, training kept by a finished save, each save and how long it took, the "
      "notice and exit reason, and the work lost after the last save; each interruption (a preemption, time limit, "
      "crash, hang, kill switch...) with what it cost until the next run trained again (detection, teardown, "
      "queue, start-up, restore, steps trained again); then allocated and productive node-hours and the goodput "
      "(kept training / allocated). Tasks come from sacct (or scontrol while slurmctld still "
      "holds them), the rest from what trainctl recorded in ~/.local/state/trainctl/runs. Writes the timeline "
      "as SVG.",
      "trainctl report"};
  std::string job, svg, format;
  bool no_svg = false, json = false;
  app.add_option("JOB", job, "a job id, a job array's id, or ARRAY_TASK")->required();
  app.add_option("--svg", svg, "write the timeline here (default: report-JOB.svg in this directory)");
  app.add_flag("--no-svg", no_svg, "write no picture");
  app.add_flag("--json", json, "the report as one JSON document (--format=json)");
  app.add_option("--format", format,
                 "text (the default), json, openmetrics (OpenMetrics 1.0) or prometheus (Prometheus' text format, "
                 "as node_exporter's textfile collector reads it): the metric names are docs/metrics.md's")
      ->type_name("FORMAT");
  if (const auto done = parse_verb(app, argc, argv, "report")) return *done;
  if (no_svg && !svg.empty()) {
    std::fprintf(stderr, "trainctl report: --svg and --no-svg together; accepted: one of them, or neither\n");
    return 2;
  }
  if (json && !format.empty() && format != "json") {
    std::fprintf(stderr, "trainctl report: --json and --format=%s together; accepted: one of them\n", format.c_str());
    return 2;
  }
  if (format.empty()) format = json ? "json" : "text";
  if (format != "text" && format != "json" && format != "openmetrics" && format != "prometheus") {
    std::fprintf(stderr,
                 "trainctl report: --format=%s is not a format; accepted: text, json, openmetrics, prometheus\n",
                 format.c_str());
    return 2;
  }
  if (!no_svg && svg.empty()) svg = "report-" + job + ".svg";
  return commands::show_run_report("trainctl", job, no_svg ? "" : svg, format);
}

}  // namespace trainctl::cli
