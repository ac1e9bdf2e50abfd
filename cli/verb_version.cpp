// trainctl version: this command's version, which the library, tools and plugin share,
// and the SLURM release on this node.
#include <chrono>
#include <cstdio>
#include <cstring>

#include "slurm_release.hpp"
#include "trainctl/trainctl.h"
#include "verbs.hpp"

namespace trainctl::cli {

int verb_version(int argc, char** argv) {
  if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf(
        "Prints trainctl's version (the library's, the tools' and the plugin's: they are one), and the SLURM\n"
        "release on this node with what trainctl does by it (--version: the first line alone).\n"
        "Usage: trainctl version\n");
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr, "trainctl version: '%s': takes no arguments\n", argv[1]);
    return 2;
  }
  std::printf("trainctl %d.%d.%d\n", TRAINCTL_VERSION_MAJOR, TRAINCTL_VERSION_MINOR, TRAINCTL_VERSION_PATCH);
  if (std::strcmp(argv[0], "--version") == 0) return 0;  // one line, as every tool's --version
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
