// trainwatch's --config file, read strictly before CLI11 reads it.
#pragma once

#include <CLI/CLI.hpp>

#include <stdexcept>
#include <string>
#include <vector>

namespace trainctl {

// One line naming FILE:LINE and what is wrong there (trainwatch exits 3 with it).
struct config_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Reads a --config file the way CLI11 will, but strictly: every line is blank, a
// comment, a [section] naming a subcommand, or "key = value" with a key the section
// (or the top level) has. Anything else (a misspelt key, broken TOML, binary junk)
// throws config_error: a config that silently drops its alerting is worse than none.
// Returns the [fs] section's options in order, as command-line words (each applies to
// the path before it, as on the command line).
std::vector<std::string> check_config(const std::string& path, const CLI::App& app);

}  // namespace trainctl
