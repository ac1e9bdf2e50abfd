// What slow steps cost a task (`trainctl report`), from the run events of its ranks:
//
// The straggler's price: each node's supervisor writes, as it ends, each of its ranks'
// work per step and the slowest rank's, over the steps the ranks timed (a `compute`
// event). In synchronous training every step waits for the slowest rank; had every rank
// worked as long as the median one, each step would have been (slowest - median) shorter,
// on every node of the task: the what-if of ByteDance's straggler study (OSDI '25). Its
// cost is that times the steps the task trained (rank 0's first to its last; the steps
// timed when its last is not known: only every check_every-th step is timed), in
// node-seconds. A loop that does not mark its compute
// (the DDP hook, watch_collectives, compute sections) times a rank's wait in its own
// gradient all_reduce as its work, which hides a straggler: the price is then a floor.
//
// The slow steps: rank 0's step times (a `step_times` event): the steps slower than the
// median + 3 MAD (step_times.hpp), and their time beyond the median.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "run_events.hpp"

namespace trainctl {

struct straggler_price {
  int ranks = 0;           // ranks measured; 0: no compute event (no supervisor, or none timed)
  std::int64_t timed = 0;  // steps timed
  std::int64_t steps = 0;  // steps priced: those the task trained, else the timed ones
  int slowest_rank = -1;   // the rank whose work per step was longest
  double slowest_s = 0;    // the agreement's slowest work per step (seconds)
  double median_s = 0;     // the median rank's
  bool marked = false;     // every rank's work was the compute its loop marked
  double wall_s = 0;       // (slowest - median) x steps: the task's wall time it cost
  bool priced() const { return ranks >= 2 && steps > 0; }
  // Slower than the median rank by more than noise (1 ms and 5 %): worth a line.
  bool shows() const { return priced() && slowest_s - median_s >= std::max(0.001, 0.05 * median_s); }
};

struct slow_steps {
  std::int64_t steps = 0;  // steps counted; 0: no step_times event
  std::int64_t outliers = 0;
  double median_s = 0, mad_s = 0, excess_s = 0;  // excess: the outliers' time beyond the median
  double threshold_s() const { return std::max(median_s + 3 * mad_s, 1.1 * median_s); }  // as step_times.hpp
};

// From one task's events (any order); `trained`: the steps the task trained (-1: not known).
straggler_price price_stragglers(const std::vector<run_event>& events, std::int64_t trained);
slow_steps find_slow_steps(const std::vector<run_event>& events);

// One clause each for the task's detail line ("" when nothing was measured, or no rank
// was slower than noise), `nodes` for node-seconds.
std::string straggler_clause(const straggler_price& p, int nodes);
std::string slow_steps_clause(const slow_steps& s, int nodes);

}  // namespace trainctl
