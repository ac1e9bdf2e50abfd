// The run's id: the same in every task of a job array and every requeue of a job, for
// loggers that resume a run (W&B's run id, MLflow's run name, a TensorBoard directory).
// TRAINCTL_RUN_ID when the user set one (1-64 of [A-Za-z0-9_.-]), else
// <SLURM_CLUSTER_NAME>-<SLURM_ARRAY_JOB_ID, else SLURM_JOB_ID>[-<the array's submit time>];
// "" outside a SLURM job. The submit time (UTC, 20261202T152554) tells apart two arrays
// that got one id (the controller's ids start again after its state is reset); the
// supervisor of the batch script decides it once per task (run_identity.hpp) and the
// job's steps inherit it. A job submitted again (after the kill switch) is a new run
// unless it is given the id.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "env.hpp"

namespace trainctl {

inline constexpr const char* kRunIdVar = "TRAINCTL_RUN_ID";

// Whether `id` can be one: 1-64 of letters, digits, '_', '.', '-'.
bool valid_run_id(const std::string& id);

// The id from an environment (`env` gives a variable's value, "" when unset), with the
// array's submit time `since_ms` (unix ms; 0: unknown, left out).
std::string run_id(const env_lookup& env, std::int64_t since_ms = 0);

struct run_event;

// When the array a task belongs to was submitted (unix ms; 0 when it cannot be told), from
// the task's own SubmitTime and SLURM_RESTART_COUNT and the array's run events. Every task
// of an array shares its SubmitTime until it is requeued, when SLURM sets it anew: a
// requeued task takes the one its array's first runs wrote (task_start's since=, the newest
// at most its own), and 0 where none did (they ran an older trainctl, whose id had none).
std::int64_t array_since(std::int64_t own_submit_ms, std::int64_t restart, const std::vector<run_event>& events);

}  // namespace trainctl
