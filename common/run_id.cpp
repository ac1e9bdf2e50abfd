#include "run_id.hpp"

#include <cctype>

namespace trainctl {

bool valid_run_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (const char c : id)
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_' && c != '.' && c != '-') return false;
  return true;
}

std::string run_id(const env_lookup& env) {
  std::string own = env(kRunIdVar);
  if (valid_run_id(own)) return own;
  std::string job = env("SLURM_ARRAY_JOB_ID");
  if (job.empty()) job = env("SLURM_JOB_ID");
  if (job.empty() || job.find_first_not_of("0123456789") != std::string::npos) return "";
  // A cluster name that could not be part of an id is left out rather than mangled.
  const std::string cluster = env("SLURM_CLUSTER_NAME");
  const std::string id = (valid_run_id(cluster) ? cluster + "-" : std::string()) + job;
  return valid_run_id(id) ? id : job;
}

}  // namespace trainctl
