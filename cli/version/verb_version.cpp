// trainctl version: this command's version (its library's and tools'), the node-state
// layout it reads, the plugin this node's SLURM loads and, in a job, the job's supervisor
// (built apart, they share a node state only with one layout), and the SLURM release.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "build_id.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "plugin_build.hpp"
#include "slurm_release.hpp"
#include "trainctl/trainctl.h"
#include "verbs.hpp"

namespace trainctl::cli {

int verb_version(int argc, char** argv) {
  if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf(
        "Prints trainctl's version (its library's and tools'), the node-state layout it reads, the SPANK plugin\n"
        "this node's SLURM loads and its build (read from plugstack.conf and the plugin's file), in a job the\n"
        "job's supervisor, a line when two of them cannot share the node state, and the SLURM release on this\n"
        "node with what trainctl does by it (--version: the first line alone).\n"
        "Usage: trainctl version\n");
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr, "trainctl version: '%s': takes no arguments\n", argv[1]);
    return 2;
  }
  std::printf("trainctl %d.%d.%d\n", TRAINCTL_VERSION_MAJOR, TRAINCTL_VERSION_MINOR, TRAINCTL_VERSION_PATCH);
  if (std::strcmp(argv[0], "--version") == 0) return 0;  // one line, as every tool's --version
  std::printf("node-state layout %u, C ABI TRAINCTL_0 (libtrainctl.so.0)\n", node_state::kVersion);
  const plugin_found plugin = find_plugin(env_or(env_var::kSlurmConf, "/etc/slurm/slurm.conf"));
  build_id b;
  std::vector<std::string> mismatches;
  if (!plugin.build.empty() && parse_build(plugin.build, &b)) {
    std::printf("plugin: %s, %s (from %s)\n", describe(b).c_str(), plugin.path.c_str(), plugin.conf.c_str());
    mismatches.push_back(layout_mismatch(b, "this node's plugin", "this trainctl"));
  } else {
    std::printf("plugin: %s\n", plugin.problem.c_str());
  }
  const std::string supervisor = env_text(kSupervisorBuildVar);
  if (!supervisor.empty() && parse_build(supervisor, &b)) {
    std::printf("this job's supervisor: %s\n", describe(b).c_str());
    mismatches.push_back(layout_mismatch(b, "this job's supervisor", "this trainctl"));
  }
  for (const std::string& m : mismatches)
    if (!m.empty()) std::printf("mismatch: %s\n", m.c_str());
  // What trainctl decides by this node's SLURM, as kubectl version shows the server's.
  const slurm_release slurm = slurm_release_here(std::chrono::milliseconds(10000));
  std::printf("SLURM %s on this node (%s): %s\n", slurm.text().c_str(), slurm.source.c_str(),
              requeues_preempted_jobs(slurm)
                  ? "it requeues a preempted job (--requeue) whose ranks saved and exited in the grace time; "
                    "trainctl-run --batch leaves that to it"
                  : "a preempted job (--requeue) whose ranks saved and exited in the grace time would end "
                    "COMPLETED; trainctl-run --batch requeues it");
  return 0;
}

}  // namespace trainctl::cli
