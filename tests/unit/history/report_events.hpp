// What the report's unit tests build their runs from: run events and SLURM's task records
// at whole (or fractional) seconds after one start.
#pragma once

#include <cstdint>
#include <string>

#include "job_history.hpp"
#include "run_events.hpp"

namespace trainctl_test {

constexpr std::int64_t kS = 1'700'000'000'000;  // a start, unix ms
constexpr std::int64_t kSec = 1000;

inline trainctl::run_event ev(double at_s, const std::string& job, const std::string& what, std::int64_t step = -1,
                              std::int64_t took = -1, const std::string& reason = "") {
  trainctl::run_event e;
  e.ms = kS + static_cast<std::int64_t>(at_s * kSec);
  e.job = job;
  e.what = what;
  e.step = step;
  e.took_ms = took;
  e.reason = reason;
  return e;
}

// start_s or end_s < 0: not started, not ended. Submitted 20 s before kS.
inline trainctl::task_record task(const std::string& id, const std::string& name, std::int64_t start_s,
                                  std::int64_t end_s, int nodes, const std::string& state = "COMPLETED") {
  trainctl::task_record t;
  t.job_id = id;
  t.name = name;
  t.state = state;
  t.submit_ms = kS - 20 * kSec;
  t.start_ms = start_s < 0 ? 0 : kS + start_s * kSec;
  t.end_ms = end_s < 0 ? 0 : kS + end_s * kSec;
  t.nodes = nodes;
  return t;
}

}  // namespace trainctl_test
