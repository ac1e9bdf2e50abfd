// trainctl status JOB [--watch] [--json]: one row per rank of a running job, where it
// is and how fast, and the job's deadline, switches, notices and findings. Without JOB:
// one line per running job of the caller that trainctl supervises.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <string>

#include "commands.hpp"
#include "parse.hpp"
#include "verb_args.hpp"
#include "verbs.hpp"

namespace trainctl::cli {

int verb_status(int argc, char** argv) {
  CLI::App app{
      "Shows every rank of the running job JOB: node, rank, pid, step, time since its last check, work per step "
      "and its factor against the fastest rank, memory headroom; and the job's time to the deadline, switches, "
      "notices and straggler or hang findings. Read from the node state the ranks already publish (one task per "
      "node beside the running steps): no signal, no collective, nothing the ranks pay for. Without JOB: one line "
      "per running job of yours that trainctl supervises (ranks, deadline, findings), and the ids of the others.",
      "trainctl status"};
  std::string job, every_text = "2s";
  bool watch = false, json = false;
  app.add_option("JOB", job,
                 "the id of a running job of yours; without it, one line per running job of yours "
                 "that trainctl supervises")
      ->check(job_id());
  app.add_flag("-w,--watch", watch, "refresh in place until the job ends or Ctrl-C");
  app.add_option("--interval", every_text, "with --watch: how often (default 2s; 0.5s to 1h)");
  app.add_flag("--json", json, "the same as one JSON document (with --watch: one per line)");
  if (const auto done = parse_verb(app, argc, argv, "status")) return *done;
  std::chrono::milliseconds every{};
  try {
    every = parse_duration(every_text, 's', false, std::chrono::hours(1));
    if (every < std::chrono::milliseconds(500))
      throw parse_error("\"" + every_text + "\" is under 0.5s; accepted: 0.5s to 1h");
  } catch (const parse_error& e) {
    std::fprintf(stderr, "trainctl status: --interval: %s\n", e.what());
    return 2;
  }
  if (job.empty()) {
    if (watch) {
      std::fprintf(stderr, "trainctl status: --watch needs a JOB; accepted: trainctl status JOB --watch\n");
      return 2;
    }
    return commands::list_job_status("trainctl", json);
  }
  return commands::show_job_status("trainctl", job, json, watch, every);
}

}  // namespace trainctl::cli
