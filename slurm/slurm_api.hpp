// The job's record from the controller through libslurm: one RPC (REQUEST_JOB_INFO_SINGLE,
// SHOW_LOCAL: no federation lookup), where `scontrol show job` costs two and an exec.
//
// It runs in a forked child of the supervisor, never in the supervisor itself: libslurm
// calls fatal() (exit) when it cannot read slurm.conf (after retrying for a minute), and
// blocks for its MessageTimeout on a slow controller; the supervisor must outlive both.
// The child opens libslurm itself, so the supervisor never maps it, and a node without
// the library (libslurm is its own package, which slurmd does not need) gets scontrol.
#pragma once

#include <optional>
#include <string>

#include "slurm_job.hpp"

namespace trainctl {

// What the child prints: one line, "trainctl-job end=S start=S limit=S preempt=0|1
// requeue=0|1 state=STATE" (unix seconds; limit -1 when unlimited), or
// "trainctl-job-error WHY". Without libslurm (or with TRAINCTL_NO_LIBSLURM set) it
// prints "trainctl-job-fallback WHY" and execs `scontrol show job -o JOB`, whose line
// follows. Runs only in a forked child: it may exit or exec.
void slurm_api_job_child(const std::string& job_id);

// Whether the controller puts back in the queue, by itself, a job whose batch script ends
// while it is being preempted with PreemptMode=REQUEUE (the ranks saved and exited within
// the grace time): SLURM does from 24.05 ("assume that job signalled for GraceTime was
// preempted"); before, such a job ends COMPLETED unless someone requeues it. A second,
// explicit requeue on 24.05 to 25.05 stays pending and requeues the resumed run again
// when it ends: the job never completes. Taken from the headers built against, which are
// the controller's own where SLURM and trainctl are upgraded together.
bool slurm_requeues_preempted_jobs();

// The record in what such a child printed; nullopt with `error` set when it printed
// none. `fallback_why` gets the reason when the child fell back to scontrol.
std::optional<job_times> parse_api_output(const std::string& output, std::string* error, std::string* fallback_why);

}  // namespace trainctl
