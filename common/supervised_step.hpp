// TRAINCTL_SUPERVISED: the job step a supervisor already runs, so that trainctl-run
// started again inside it (a batch script's first line, a script under the SPANK plugin)
// adds no second supervisor. Its value names the step: the job id for the batch step,
// JOB.STEP for a step srun started, "local" outside SLURM. Not a bare "1": sbatch hands
// the submitting shell's environment to the job it submits, and a job submitted from
// inside another one (the next link of a chain) is not supervised by that one's.
//
// A batch script's first line, as docs/users.md and man trainctl-run show it:
//   [ "${TRAINCTL_SUPERVISED:-}" = "$SLURM_JOB_ID" ] || exec trainctl-run --batch -- "$0" "$@"
#pragma once

#include <string>

#include "env.hpp"

namespace trainctl {

constexpr const char* kSupervisedVar = "TRAINCTL_SUPERVISED";
// Set by a trainctl-run that found its step supervised and ran its command as it is: a
// second such call in the same step is a batch script that starts itself again.
constexpr const char* kPassedOnVar = "TRAINCTL_SUPERVISED_PASSED_ON";

// The step this process runs in, as TRAINCTL_SUPERVISED names it; `env` returns a
// variable's text, "" when unset.
std::string supervised_step(const env_lookup& env);

// What trainctl-run does with its command in a step that may already be supervised.
enum class nesting {
  supervise,  // no supervisor in this step yet: this call is it
  pass_on,    // one is: run the command as it is, without a second supervisor
  loop,       // one is, and this step already passed a command on: a script that execs itself again
};
nesting nesting_of(const env_lookup& env);

}  // namespace trainctl
