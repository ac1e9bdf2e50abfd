// The parsed configuration behind trainctl::config.
#pragma once

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "options.hpp"
#include "parse.hpp"
#include "state_dir.hpp"
#include "trainctl/controller.hpp"

namespace trainctl {

struct config::impl {
  std::string kill_switch;
  std::string save_switch;
  std::vector<named_path> exit_switches;
  std::vector<named_path> save_switches;
  double deadline = 0;  // unix seconds; 0 = none
  threshold memory;
  threshold gpu;
  std::chrono::milliseconds poll_interval = option::kPollIntervalDefault;
  std::vector<int> signals = option::default_rank_signals();
  int check_every = 10;
  std::string state_path;  // empty: default_state_path()
  int rank = 0;
  int world_size = 0;             // the ranks whose saves make one checkpoint; 0: the launcher's (world_size())
  double straggler_factor = 1.5;  // slowest vs fastest rank's work per step; 0: off
  int straggler_agreements = 5;   // in a row, before a rank is reported
  std::string log_dir;            // empty: $SLURM_SUBMIT_DIR, else the working directory
  std::vector<std::string> warnings;

  // Throws parse_error (without the key) for a bad value, std::invalid_argument for a bad key.
  void set(std::string_view key, std::string_view value);
  std::string get(std::string_view key) const;
};

}  // namespace trainctl
