// The part of trainctl drill that runs on the job's nodes (trainctl-run
// --signal-rank-here, started by srun --overlap beside the job's steps): one rank of the
// job stopped, resumed or killed, as a hang or a crash would.
#pragma once

#include <string>

namespace trainctl {

// `spec` is JOB:RANK:SIGNAL (SIGNAL: STOP, CONT, KILL). On this node, sends SIGNAL to
// rank RANK of job JOB (a process of this user's with SLURM_JOB_ID=JOB and RANK=RANK,
// found as trainctl stacks finds ranks) and prints one line,
//   signalled rank=R pid=P host=H log_dir=D
// (D: the rank's TRAINCTL_LOG_DIR, else its SLURM_SUBMIT_DIR); nothing when the rank
// is not here. Exit status 0, or 2 for a spec it cannot read.
int signal_rank_here(const std::string& spec);

}  // namespace trainctl
