// How a user's verb on a login node reaches a running job: the job's record, once, when
// this user may look inside it, and the srun that starts trainctl-run's helper beside
// its steps on each of its nodes. Used by status and stacks.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "slurm_job.hpp"

namespace trainctl::commands {

// Which record of `scontrol show job -o ID`'s output a verb looks inside. The output has
// one line per record: a job array's id gives one per running task and one for its
// pending rest, so "trainctl stacks ARRAY" means the array's one running task. The only
// record, else that running task, else the first; nullopt when several tasks run, with
// `why` naming them (a verb looks inside one task).
std::optional<job_record> record_to_look_inside(const std::string& output, std::string* why);

// The job's record when it is running and this user may look inside it; else one line
// said on stderr (`who: what JOB: why; accepted: ...`) and nothing.
std::optional<job_record> running_job_of_mine(const std::string& who, const std::string& what, const std::string& job);

// The srun command line that runs one task of trainctl-run (the one beside this program:
// both are installed in the same bin directory) with `args` on each of the job's nodes,
// beside its running steps (--overlap).
std::vector<std::string> srun_helper_on_each_node(const job_record& job, const std::vector<std::string>& args);

}  // namespace trainctl::commands
