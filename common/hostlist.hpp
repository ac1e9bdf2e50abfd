// SLURM's compressed node lists ("n[1-3,7],gpu[01-02]", SLURM_STEP_NODELIST), expanded
// into node names. Only what SLURM writes is accepted: one bracket group per name,
// numeric ranges (their zero padding kept); anything else expands to nothing, and the
// caller goes on without the list.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace trainctl {

// The names `list` expands to, in order; empty when it is empty, malformed, or longer
// than `limit` names.
std::vector<std::string> expand_hostlist(const std::string& list, std::size_t limit = 65536);

}  // namespace trainctl
