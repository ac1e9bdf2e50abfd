// A node convicted by contrast across programs. A crash in a one-node job is only a
// suspicion (bad_nodes.hpp): alone, nothing tells the node's fault from the program's.
// A node is convicted when kContrastPrograms different programs (job arrays) crashed
// there, each of which also ran cleanly on another node (a task that ended ok there:
// the task_end events, run_events.hpp): the programs are fine elsewhere, the node is
// not. One program crashing on one node and running cleanly elsewhere is no such
// evidence (it may crash at random, or on that node's data), and a program that
// crashed on other nodes too does not count. A program is an array's runs with one
// command line (run_events.hpp, program_id): in a sweep, each task with its own
// arguments is a program of its own, and another task's clean run proves nothing of
// the one that crashed.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bad_nodes.hpp"
#include "run_events.hpp"

namespace trainctl {

inline constexpr std::size_t kContrastPrograms = 2;

struct clean_elsewhere {
  std::string array;     // the program's array job id
  std::string clean_on;  // a node where one of its tasks ended ok
};

// The array a suspicion names (after kOfArray), "" when none.
std::string suspicion_array(const bad_node& b);

// The programs that crashed on `host` (its recent suspicions, in `recent`) and ran
// cleanly on another node, crashing on no other: `events_of` gives an array's run events.
std::vector<clean_elsewhere> programs_clean_elsewhere(
    const std::string& host, const std::vector<bad_node>& recent,
    const std::function<std::vector<run_event>(const std::string& array)>& events_of);

// Convicts `host` by contrast when it has no recent conviction yet: reads the memory at
// `path` and the arrays' run events, and records one finding naming the programs. The
// line to log ("" when nothing was recorded, or why it could not be).
std::string convict_by_contrast(const std::string& path, const std::string& host, std::int64_t now_s,
                                std::chrono::seconds expiry);

}  // namespace trainctl
