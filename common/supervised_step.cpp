#include "supervised_step.hpp"

#include "env_names.hpp"

namespace trainctl {

std::string supervised_step(const env_lookup& env) {
  std::string job = env(env_var::kSlurmJobId);  // not const: returned, it moves
  if (job.empty()) return "local";
  const std::string step = env(env_var::kSlurmStepId);
  // The batch step: no SLURM_STEP_ID up to 24.11; 26.05 sets SLURM_BATCH_SCRIPT's id
  // there, as a signed number (-5; 0xfffffffb unsigned). A batch script compares with
  // $SLURM_JOB_ID alone either way.
  if (step.empty() || step == "batch" || step == "-5" || step == "4294967291") return job;
  return job + "." + step;
}

nesting nesting_of(const env_lookup& env) {
  const std::string here = supervised_step(env);
  if (env(kSupervisedVar) != here) return nesting::supervise;
  return env(kPassedOnVar) == here ? nesting::loop : nesting::pass_on;
}

}  // namespace trainctl
