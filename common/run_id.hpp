// The run's id: the same in every task of a job array and every requeue of a job, for
// loggers that resume a run (W&B's run id, MLflow's run name, a TensorBoard directory).
// TRAINCTL_RUN_ID when the user set one (1-64 of [A-Za-z0-9_.-]), else
// <SLURM_CLUSTER_NAME>-<SLURM_ARRAY_JOB_ID, else SLURM_JOB_ID>; "" outside a SLURM job.
// A job submitted again (after the kill switch) is a new run unless it is given the id.
#pragma once

#include <string>

#include "env.hpp"

namespace trainctl {

inline constexpr const char* kRunIdVar = "TRAINCTL_RUN_ID";

// Whether `id` can be one: 1-64 of letters, digits, '_', '.', '-'.
bool valid_run_id(const std::string& id);

// The id from an environment (`env` gives a variable's value, "" when unset).
std::string run_id(const env_lookup& env);

}  // namespace trainctl
