// What the stacks of a job's ranks say about a hang: the one-line summary (where most
// ranks wait, which are elsewhere) and the nodes the evidence points at. Pure functions of
// the dumps (stack_dump.hpp), shared by the supervisor's hang path, `trainctl stacks` and
// the drill.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "stack_dump.hpp"

namespace trainctl {

// One line: the frame most ranks are stuck in, and the ranks stuck elsewhere. Where two
// frames hold the most ranks alike, it names no odd one out: "N ranks in K" kNoOddOneOut
// and each rank's frame (the drill reads it so).
std::string summarize(const std::vector<rank_stack>& stacks);
inline constexpr const char* kNoOddOneOut = " frames, no one frame holding the most: ";
// The nodes a hang points at, each with why: of the ranks stuck elsewhere than most (when
// they are fewer than half), a node all of whose ranks (two or more) are elsewhere, or
// where one waits in the kernel ('D'). A rank elsewhere beside its node's other ranks in
// the common frame is the program's own path, not the node's: no suspect. Only valid
// SLURM node names.
std::map<std::string, std::string> suspect_hosts(const std::vector<rank_stack>& stacks);
// The nodes with ranks elsewhere that suspect_hosts does not blame, for the log to say so.
std::set<std::string> unblamed_hosts(const std::vector<rank_stack>& stacks);

}  // namespace trainctl
