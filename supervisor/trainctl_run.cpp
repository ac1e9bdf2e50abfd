// trainctl-run: the supervisor by hand, for clusters without the SPANK plugin; the
// plugin runs every task under it too. Its command line is run_cli.cpp's.
//   srun trainctl-run --graceful-exit=10 --kill-switch -- torchrun ... train.py
#include <cstdio>
#include <exception>

#include "run_cli.hpp"

int main(int argc, char** argv) {
  // The supervisor reports its own failures; this only turns what nobody expected
  // (before the command starts) into one line instead of std::terminate's abort.
  try {
    return trainctl::commands::run("trainctl-run", argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainctl-run: %s\n", e.what());
    return 1;
  }
}
