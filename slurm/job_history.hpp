// What SLURM remembers of a job's tasks, for `trainctl report`: each task's (each run's)
// submit, eligible, start and end times, state and node count, from sacct where job
// accounting runs, brought up to date with slurmctld's own view (scontrol).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trainctl {

struct task_record {   // what SLURM says about one task
  std::string job_id;  // the task's own (raw) job id
  std::string name;    // 1234_5 for an array task, else the id
  std::string state;
  std::string user;
  std::int64_t submit_ms = 0, eligible_ms = 0, start_ms = 0, end_ms = 0;  // 0: unknown / not yet
  int nodes = 0;
  // Not SLURM's: an earlier run of a requeued job that no accounting recorded, rebuilt
  // from trainctl's run events (its start is its first event's).
  bool from_events = false;
};

// `sacct -X -n -P -o JobIDRaw,JobID,State,User,Submit,Eligible,Start,End,NNodes` output.
std::vector<task_record> parse_sacct_tasks(const std::string& output);
// `scontrol show job -o ID` output, one line per task (pending tasks of an array, shown
// as one line 1234_[3-5], are one record with no start).
std::vector<task_record> parse_scontrol_tasks(const std::string& output);

// sacct's records brought up to date with slurmctld's (scontrol), which slurmdbd hears
// of a moment later: a run sacct lacks is added, an end it lacks is taken. Returns how
// many records slurmctld supplied.
std::size_t merge_live_tasks(std::vector<task_record>& recorded, const std::vector<task_record>& live);

// The tasks of job (or array) `job` from sacct where accounting runs, else from
// slurmctld's memory. *source names where they came from; *why says why neither answered.
std::vector<task_record> job_tasks(const std::string& job, std::string* source, std::string* why);

// The tasks of user `user`'s jobs named `name` that started in the last `days` days, from
// sacct (`trainctl lint`: the earlier runs of a script); empty with *why when sacct
// cannot answer (no accounting) or knows none.
std::vector<task_record> tasks_named(const std::string& user, const std::string& name, int days, std::string* why);

}  // namespace trainctl
