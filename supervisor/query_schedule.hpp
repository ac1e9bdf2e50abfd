// When a node's supervisor asks the controller, so that the nodes of one job never ask
// in the same second and jobs do not line up with each other. Each job gets an offset
// of its own (a hash of its id); within it, node i of N takes the slot i*window/N, plus
// a jitter that keeps neighbouring slots at least a second apart. Times are wall-clock,
// which every node of a job shares: the spread holds whenever each supervisor started.
#pragma once

#include <cstdint>
#include <string>

namespace trainctl {

struct query_slots {
  std::uint64_t job_hash = 0;
  std::int64_t node = 0;   // SLURM_NODEID
  std::int64_t nodes = 1;  // SLURM_JOB_NUM_NODES
  std::uint64_t seed = 0;  // this supervisor's jitter
};

// From the job id and the environment of a task (SLURM_NODEID, SLURM_JOB_NUM_NODES or
// SLURM_NNODES); one node of one when they are unset or nonsense.
query_slots slots_from_env(const std::string& job_id);

// This node's offset in [0, window): its slot, plus jitter.
std::int64_t slot_offset_ms(query_slots& s, std::int64_t window_ms);

// The first wall-clock time >= not_before_ms that is this node's slot in a repeating
// window (the periodic EndTime read).
std::int64_t next_slot_ms(query_slots& s, std::int64_t window_ms, std::int64_t not_before_ms);

// The window the nodes' first reads (and the read before the deadline) are spread over:
// two seconds a node, at least 6 s, at most a minute and never more than the period.
std::int64_t spread_window_ms(const query_slots& s, std::int64_t period_ms);

}  // namespace trainctl
