// Each rank as a reader outside it takes it from the node state (its node's supervisor:
// the save commits at a run's end, the --metrics-dir file): the slot of the rank's newest
// process (a restarted rank leaves its old slot behind), copied out of the atomics once.
// A rank's controller writes its slot (check() stores beat_ms after the step; a save's
// fields are stored before the step they belong to is agreed); readers here only load.
#pragma once

#include <cstdint>
#include <vector>

#include "node_state.hpp"

namespace trainctl {

struct rank_view {
  std::int32_t rank = -1;
  std::int32_t pid = 0;
  std::int64_t step = -1;    // the last step check() saw
  std::int64_t beat_ms = 0;  // when (unix ms)
  std::int64_t step_us = 0;  // work per step outside check(), its last agreement window (0: not timed)
  std::int64_t straggler_reports = 0;
  std::int64_t asked_step = -1, asked_ms = 0;          // the last save trainctl asked for
  std::int64_t committed_step = -1, committed_ms = 0;  // the last save the rank committed (ctl.saved)
  std::int64_t pending_step = -1, pending_ms = 0;      // the oldest asynchronous write still pending (-1: none)
};

// Every rank that called check() on this node, by rank, each from its newest process's
// slot (the one with the latest check()).
std::vector<rank_view> newest_rank_views(const node_state& ns);

}  // namespace trainctl
