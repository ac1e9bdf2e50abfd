// The node side of trainctl status: started by the verb on each node of the job (a task
// of `srun --overlap trainctl-run --status-here=JOB`), as the job's user beside its
// steps. It reads copies of the job's node states and the ranks' /proc entries; it never
// writes to a node state, never locks one and never signals a rank.
//
// Its lines are the contract with the login side (cli/status/job_status's
// parse_status_lines): one per node state, rank, dead rank and switch, then `end` after
// each round; the last field of a line may hold spaces.
//
//   node host=N now_ms=T flags=F deadline_ms=D supervised=0|1 published_ms=P longest_save_ms=S
//   rank host=N rank=R pid=P step=S beat_ms=B step_us=U slow=K agreements=A mem_free=F mem_limit=L
//   died host=N rank=R pid=P error=TEXT
//   switch host=N kind=exit|save name=NAME present=0|1 touches=C path=PATH
//   error host=N TEXT
//   end host=N
#pragma once

#include <chrono>
#include <string>

namespace trainctl {

// This node's part of job `job_id` (every node state of the job here: the ones its
// ranks name in TRAINCTL_STATE and the default ones), as lines without the `end` line.
std::string probe_job_here(const std::string& job_id);

// The probe's task: probe_job_here's lines and "end host=N", once, or every `every`
// (> 0) until the reader goes away. Exit status 0.
int run_status_probe(const std::string& job_id, std::chrono::milliseconds every);

}  // namespace trainctl
