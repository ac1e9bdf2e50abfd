// The names of --metrics-dir's files, which two sides share: the supervisor writes
// trainctl_<job>_<step>_<node>.prom (supervisor/task_metrics.hpp), and the plugin's job
// epilog, as root, removes what a task killed outright (SIGKILL at the end of KillWait,
// the OOM killer) left of a job in the site's directory.
#pragma once

#include <string>

namespace trainctl {

// trainctl_<job>_<step>_<node>.prom, each part with anything but [A-Za-z0-9.-] as '-'
// and at most 64 characters ("none" for an empty one).
std::string metrics_file_name(const std::string& job, const std::string& step, const std::string& node);

// Removes job `job`'s files (and the temporary ones a write cut short left) from the
// directory `dir`, never following a link: its own name is removed, not what it points
// at. `job` is a job id (digits); "" or why not.
std::string remove_job_metrics(const std::string& dir, const std::string& job);

}  // namespace trainctl
