// --graceful-exit=auto in the supervisor: the graceful exit learnt from how long this
// job array's saves took. Read from the save-times store when the task starts; every
// longer save a rank on this node makes (the node state's longest_save_ms) grows it,
// and the node's publisher records it for the next task.
#pragma once

#include <cstdint>
#include <string>

#include "save_times.hpp"

namespace trainctl {

class graceful_auto {
 public:
  // key: SLURM_ARRAY_JOB_ID, else SLURM_JOB_ID. `problem` gets one line when the store
  // cannot be used (the first-task default applies then). The job name's store (what a
  // drill of it measured) counts too: the longest of both.
  graceful_auto(const std::string& key, const std::string& job_name, std::string job, std::string node,
                std::string* problem);

  // The graceful exit for a time limit of `limit_s` (0: unknown), and why.
  auto_graceful current(std::int64_t limit_s) const { return auto_graceful_exit(longest_ms_, limit_s); }
  std::int64_t longest_ms() const { return longest_ms_; }
  const std::string& path() const { return path_; }

  // A node's longest save so far: true when it is longer than any known (the graceful
  // exit grows). `record`: this supervisor writes it to the store (the publisher).
  // `problem` gets one line when it could not be recorded.
  bool saw(std::int64_t save_ms, bool record, std::string* problem);

 private:
  std::string path_, job_, node_;
  std::int64_t longest_ms_ = 0;   // the longest known, recorded or not
  std::int64_t recorded_ms_ = 0;  // the longest this supervisor has written
};

}  // namespace trainctl
