// What the node's supervisor does with its ranks' snapshots in memory as the task ends
// (protocol/snapshot_store.hpp). After a rank died, each whole snapshot newer than the
// newest save committed in its checkpoint directory is written out there as a save,
// DIR/snapshot-STEP/rank-RANK.snapshot (a temporary name, fsync, rename), and committed
// as that rank (the marker ctl.saved() writes), so resume_path() counts it like any save;
// a write that fails or runs past its bound leaves nothing committed. Then every slot
// goes, whatever happened: no snapshot stays in memory after the task.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainctl {

struct snapshot_writeout {
  std::int64_t newest = -1;  // the newest step written out (-1: none)
  std::int64_t oldest = -1;  // the oldest step written out
  int ranks = 0;             // how many ranks' snapshots were written out
  // A snapshot not written out, nothing committed: its rank and step, and why.
  struct failure {
    std::int64_t rank, step;
    std::string why;
  };
  std::vector<failure> failed;
  int older = 0;                 // snapshots not newer than the save committed in their directory
  std::int64_t older_than = -1;  // that save's step
};

// `rank_died`: the task's command did not end well (a rank raised, was killed, was ended
// by the hang's action or by SLURM after a peer died). Only then is anything written.
// `bound_unix_ms`: no write goes on past it (the job's end, or the supervisor's own).
snapshot_writeout write_out_snapshots(const std::string& state_path, bool rank_died, std::int64_t bound_unix_ms);

}  // namespace trainctl
