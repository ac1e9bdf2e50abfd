// The no-progress breaker's fields of the node state and their rules, as code: the only
// place that reads or writes them (scripts/protocol_fields.py fails on a raw access
// elsewhere). See run_progress.hpp for what the breaker decides.
//
//   breaker.step1  1 + the step the array's last `runs` runs failed at without getting
//                  further; 0 not armed.
//   breaker.runs   how many runs that was (1 to 1000).
// Written once by the supervisor before its command starts (arm); read by every rank at
// its first check() (armed_step): a rank whose first check() is at that step or earlier
// votes to end the run there. Ordering: runs is stored first, step1 last with release,
// then seq is bumped; a reader loads step1 with acquire and then runs, so it never sees
// an armed step without its count.
#pragma once

#include <cstdint>

#include "node_state.hpp"
#include "notice_fields.hpp"

namespace trainctl::breaker_fields {

void arm(node_state& ns, std::int64_t step, std::int32_t runs);

// The step the breaker is armed at, or -1: not armed, or not a state a supervisor wrote.
inline std::int64_t armed_step(const node_state& ns) {
  const std::int64_t step1 = ns.breaker.step1.load(std::memory_order_acquire);
  const std::int32_t runs = ns.breaker.runs.load(std::memory_order_relaxed);
  if (!has_header(ns) || valid_flags(ns) != notice_fields::flags(ns)) return -1;
  return step1 > 0 && runs >= 1 && runs <= 1000 ? step1 - 1 : -1;
}

}  // namespace trainctl::breaker_fields
