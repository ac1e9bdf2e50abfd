// The run id of a job (run_id.hpp), decided once per task by the supervisor of its batch
// script before the script starts, so that every step of the job inherits it through the
// environment: one controller query per array task, never one per rank.
#pragma once

#include <chrono>
#include <string>

namespace trainctl {

// TRAINCTL_RUN_ID where the user set one; else the id with the array's submit time: the
// job's SubmitTime from the controller, and in a requeued task the time its array's first
// runs wrote. The task_start line it appends to the array's run events says that time for
// the tasks and requeues after it, and where an earlier array of the same id ends. In a
// child under `deadline` (the controller may be slow, the home may stall). Where it cannot
// tell: the id without the time, and *why says so in one line.
std::string decide_run_id(const std::string& job_id, std::chrono::milliseconds deadline, std::string* why);

}  // namespace trainctl
