// When a node's supervisor asks the controller, so that the nodes of one job never ask
// in the same second and jobs do not line up with each other.
//
// Node i of a job of N nodes owns the wall-clock seconds s with (s - h) mod M == i mod M,
// where h comes from a hash of the job id and M = min(N, 60). Every query that can wait
// (the first read, the periodic ones, the one before the deadline) is moved to the next
// second this node owns, at a random millisecond in its first half. So up to 60 nodes never share a
// second, whatever each asks for and whenever each started; beyond that, the periodic
// reads are also spread over the period (node i aims at h + i*P/N), so that about N/P
// nodes share a second rather than N/60. Wall-clock seconds are what the nodes share.
#pragma once

#include <cstdint>
#include <string>

namespace trainctl {

struct query_slots {
  std::uint64_t job_hash = 0;
  std::int64_t node = 0;   // SLURM_NODEID
  std::int64_t nodes = 1;  // SLURM_JOB_NUM_NODES
  std::uint64_t seed = 1;  // this supervisor's jitter
};

constexpr std::int64_t kMaxOwnCycle = 60;  // seconds: the longest a query waits for its slot

// From the job id and the environment of a task (SLURM_NODEID, SLURM_JOB_NUM_NODES or
// SLURM_NNODES); one node of one when they are unset or nonsense.
query_slots slots_from_env(const std::string& job_id);

// How often this node owns a second: min(N, 60) s, in ms.
std::int64_t own_cycle_ms(const query_slots& s);

// The first moment >= t_ms in a second this node owns.
std::int64_t in_own_second(query_slots& s, std::int64_t t_ms);

// The next periodic read at or after not_before_ms: this node's point in the period,
// then its next own second.
std::int64_t next_periodic_ms(query_slots& s, std::int64_t period_ms, std::int64_t not_before_ms);

}  // namespace trainctl
