// Which variable gives a process its rank: the first of env_var::kRankVariables that is
// set (the launcher's own before SLURM's task number: under mpirun, SLURM_PROCID is the
// orted's, not the rank's). One rule for the library reading its own environment and the
// supervisor reading a rank's /proc/PID/environ.
#pragma once

#include <string>

#include "env_names.hpp"

namespace trainctl {

struct rank_variable {
  const char* name = nullptr;  // nullptr: none is set
  std::string text;            // as set: a caller parses it and says what was wrong
};

// `lookup(name)`: the variable's text, "" when unset.
template <class Lookup>
rank_variable rank_variable_of(Lookup lookup) {
  for (const char* name : env_var::kRankVariables) {
    std::string text = lookup(name);
    if (!text.empty()) return {name, std::move(text)};
  }
  return {};
}

}  // namespace trainctl
