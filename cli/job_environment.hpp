// The environment a job gets from sbatch's --export (ALL, the default; NONE; names;
// NAME=VALUE items), as `trainctl lint` and `trainctl drill` read a script for the job
// it will be: a variable the job would not get reads as unset, whatever the submitting
// shell holds. SLURM_ variables always pass (SLURM sets them).
#pragma once

#include <map>
#include <set>
#include <string>

#include "env.hpp"

namespace trainctl {

class job_environment {
 public:
  // `export_value`: --export's value (not given: ALL); `submitting`: the shell's own.
  job_environment(const std::string* export_value, env_lookup submitting);
  std::string operator()(const char* name) const;
  bool passes_all() const { return keep_all_; }

 private:
  env_lookup submitting_;
  bool keep_all_ = true;
  std::map<std::string, std::string> set_;
  std::set<std::string> named_;
};

}  // namespace trainctl
