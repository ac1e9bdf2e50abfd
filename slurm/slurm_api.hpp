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

#include "scontrol_text.hpp"

namespace trainctl {

// What the child prints: one line, "trainctl-job end=S start=S limit=S preempt=0|1
// requeue=0|1 state=STATE" (unix seconds; limit -1 when unlimited), or
// "trainctl-job-error WHY". Without libslurm (or with TRAINCTL_NO_LIBSLURM set) it
// prints "trainctl-job-fallback WHY" and execs `scontrol show job -o JOB`, whose line
// follows. Runs only in a forked child: it may exit or exec.
void slurm_api_job_child(const std::string& job_id);

// The record in what such a child printed; nullopt with `error` set when it printed
// none. `fallback_why` gets the reason when the child fell back to scontrol.
std::optional<job_times> parse_api_output(const std::string& output, std::string* error, std::string* fallback_why);

}  // namespace trainctl
