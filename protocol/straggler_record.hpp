// Where a straggler finding is kept: a line in LOG_DIR/slow_nodes (what `trainwatch
// slow-nodes` and the team read) and the node in the user's bad-node memory. Written by
// the node's supervisor, in a child with a deadline, from what the slow rank put in its
// heartbeat slot; by the rank's watcher thread when no supervisor runs. Never by a
// rank's training thread: the log directory is shared, and may stall or hold a FIFO.
#pragma once

#include <cstdint>
#include <string>

namespace trainctl {

struct straggler_finding {
  int rank = -1;
  std::string job;  // SLURM_JOB_ID, or "-"
  std::int64_t step = 0;
  std::int64_t slow_us = 0;     // the straggler's work per step
  std::int64_t fastest_us = 0;  // the fastest rank's
};

// The slow_nodes line for `f` on this node (node_name(), gpu_uuids()), newline-ended:
//   <unix s> host=H rank=R job=J step=S step_ms=X fastest_ms=Y factor=F gpus=U
std::string slow_nodes_line(const straggler_finding& f, std::int64_t now_s);

// Appends slow_nodes_line to LOG_DIR/slow_nodes ("" log_dir: not there) and remembers
// this node as slow. Only a regular file of this user takes the line: no link is
// followed and no FIFO waited on. Returns one line per thing done or not done, each
// newline-ended ("recorded in PATH", "not appended to PATH: why", ...).
std::string record_straggler(const straggler_finding& f, const std::string& log_dir);

}  // namespace trainctl
