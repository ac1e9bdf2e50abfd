// The no-progress breaker's part in a supervisor (its rule: run_progress.hpp). At the
// start every supervisor judges the array's runs and arms its node state; the batch
// step's supervisor, at the end, tells whether the ranks' agreement ended the run on it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "run_events.hpp"

namespace trainctl {

// This array's (or job's) run events, read in a child with a 5 s limit: they live in
// the home directory, which may be a stalled mount. `why` gets one line when they could
// not be read; a missing file is no events and no why.
std::vector<run_event> read_own_run_events_bounded(const std::vector<int>& ignore_signals, std::string* why);

// Whether rank 0 of run `job` (begun at `since_ms`, unix ms) noted its exit on the
// breaker's vote (an `exit` event with reason no-progress).
bool breaker_ended_run(const std::vector<run_event>& events, const std::string& job, std::int64_t since_ms);

}  // namespace trainctl
