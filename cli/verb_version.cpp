// trainctl version: this command's version, which the library, tools and plugin share.
#include <cstdio>
#include <cstring>

#include "trainctl/trainctl.h"
#include "verbs.hpp"

namespace trainctl::cli {

int verb_version(int argc, char** argv) {
  if (argc == 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0)) {
    std::printf(
        "Prints trainctl's version (the library's, the tools' and the plugin's: they are one).\n"
        "Usage: trainctl version\n");
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr, "trainctl version: '%s': takes no arguments\n", argv[1]);
    return 2;
  }
  std::printf("trainctl %d.%d.%d\n", TRAINCTL_VERSION_MAJOR, TRAINCTL_VERSION_MINOR, TRAINCTL_VERSION_PATCH);
  return 0;
}

}  // namespace trainctl::cli
