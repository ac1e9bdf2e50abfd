#include "supervised_step.hpp"

namespace trainctl {

std::string supervised_step(const std::function<std::string(const char*)>& env) {
  const std::string job = env("SLURM_JOB_ID");
  if (job.empty()) return "local";
  const std::string step = env("SLURM_STEP_ID");
  return step.empty() ? job : job + "." + step;  // the batch step has no SLURM_STEP_ID
}

nesting nesting_of(const std::function<std::string(const char*)>& env) {
  const std::string here = supervised_step(env);
  if (env(kSupervisedVar) != here) return nesting::supervise;
  return env(kPassedOnVar) == here ? nesting::loop : nesting::pass_on;
}

}  // namespace trainctl
