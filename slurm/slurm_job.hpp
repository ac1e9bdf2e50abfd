// What the supervisor asks the controller about its job: when it ends, its time limit
// and whether it is being preempted. One `scontrol show job -o` per question, under a
// timeout, so a slow or dead controller never hangs the supervisor.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "scontrol_text.hpp"

namespace trainctl {

// `scontrol show KIND -o ID` (job, partition) with a timeout: its one line, or nullopt
// with `error` saying why in one line.
std::optional<std::string> scontrol_show(const std::string& kind, const std::string& id,
                                         std::chrono::milliseconds timeout, std::string* error);

// What a user may name a job by: "1234" (a job, or a whole job array) or "1234_5" (one
// task of an array), each number at most 12 digits.
bool is_job_id(const std::string& text);

// One job as a user's verb sees it, read once from its `scontrol show job -o` line:
// which job, whose, and where it runs. The verbs take their SLURM facts from here and
// never parse the line again.
struct job_record {
  std::string id;           // JobId
  std::string name;         // JobName
  std::string state;        // JobState
  std::string user;         // the name in UserId ("name(uid)")
  long uid = -1;            // the uid in UserId; -1 when not shown
  std::string partition;    // Partition
  std::string node_list;    // NodeList, compressed as SLURM prints it
  std::string num_nodes;    // NumNodes, as printed (srun -N takes it so)
  std::string work_dir;     // WorkDir
  std::string reason;       // Reason: why it waits (JobHeldUser: held, as trainctl's kill switch holds an array)
  std::int64_t end_ms = 0;  // EndTime as unix ms; 0 when unknown or unparsable
};

// Reads the fields above from one line; absent ones stay empty.
job_record parse_job_record(const std::string& line);
// `scontrol show job -o ID` with a timeout, read into a record; nullopt with `error`
// saying why in one line.
std::optional<job_record> show_job_record(const std::string& id, std::chrono::milliseconds timeout, std::string* error);

// Runs `scontrol show job -o JOB` with a timeout. nullopt when it failed or timed out;
// `error` then says why in one line.
std::optional<job_times> query_job(const std::string& job_id, std::chrono::milliseconds timeout, std::string* error);

class started_child;

// The job's record asked for now and answered later, for the supervisor's event loop,
// which reaps every child itself: a slow or dead controller then delays only the answer,
// never a notice, a switch or the deadline. One query at a time, in a child: through
// libslurm (one RPC, see slurm_api.hpp) where the library is there, else `scontrol
// show job`. The child ignores `ignore` (the notice signals), so the TERM that SLURM
// sends to every process of the step does not kill the query that is to tell what it
// means.
class job_query {
 public:
  job_query();
  ~job_query();
  job_query(const job_query&) = delete;
  job_query& operator=(const job_query&) = delete;

  // False with `error` set when it could not start.
  bool start(const std::string& job_id, std::chrono::milliseconds timeout, const std::vector<int>& ignore,
             std::string* error);
  bool running() const { return child_ != nullptr; }
  pid_t pid() const;
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }
  const char* how() const { return use_api_ ? "libslurm" : "scontrol"; }  // for the log
  // Why the last answer came through scontrol instead of libslurm, once ("" otherwise).
  std::string take_fallback_note();
  void drain();  // reads what it printed so far (its output is small; this keeps its pipe empty)
  // The reaped child's answer; nullopt with `error` set when it failed.
  std::optional<job_times> finish(int wait_status, std::string* error);
  // Past its deadline: kills and forgets it; always nullopt, with `error` set.
  std::optional<job_times> expire(std::string* error);

 private:
  std::unique_ptr<started_child> child_;
  bool use_api_ = true;  // until libslurm turns out to be missing
  std::string fallback_note_;
  std::string job_id_;
  std::chrono::steady_clock::time_point deadline_{};
};

// `scontrol requeue JOB`: puts a job that was preempted (and ended early, after its
// ranks saved) back in the queue. False with `error` set when it failed.
bool requeue_job(const std::string& job_id, std::chrono::milliseconds timeout, std::string* error);

// Cancels the tasks of job array `array_id` that never started (`scancel
// --state=PENDING`), sparing those pending again after a run (a preempted task SLURM
// requeued: its work is not lost with the rest); `spared` gets their ids ("4242_2 4242_5").
// False with `error` set.
bool cancel_pending_tasks(const std::string& array_id, std::chrono::milliseconds timeout, std::string* error,
                          std::string* spared);
// The pending tasks in squeue's `-r -O ArrayJobID,ArrayTaskID,RestartCnt` lines of array
// `array_id`: those that never ran ("4242_5" each), and those requeued after a run
// (space separated). Lines of any other shape are skipped.
void pending_by_restarts(const std::string& squeue_output, const std::string& array_id,
                         std::vector<std::string>* never_ran, std::string* requeued);

// The tasks of job array `array_id` that have not started: how many (-1 with `error` set
// when squeue failed), and as `scontrol release` takes them ("4242_[2-5]", several
// comma-separated): the array's id alone would also name its ended tasks, and scontrol
// then fails with "Job has already finished".
struct pending_array_tasks {
  int count = -1;
  std::string ids;
};
pending_array_tasks pending_tasks(const std::string& array_id, std::chrono::milliseconds timeout, std::string* error);

// `scontrol hold IDS`: holds the tasks `ids` names (pending_tasks' ids) that have not
// started; `scontrol release IDS` lets them start. False with `error` set.
bool hold_pending_tasks(const std::string& ids, std::chrono::milliseconds timeout, std::string* error);

}  // namespace trainctl
