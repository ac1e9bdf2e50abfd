// PyTorch's flight recorder for the hang dump: the variables that switch it on for the
// ranks a supervisor starts, and the request and collection of each rank's dump. Runs
// in the supervisor and its hang-dump child, as the user. The dump itself is written by
// trainctl's Python package inside the rank (python/trainctl/flight_recorder.py); the
// cross-rank reading of it is collective_verdict.hpp's.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace trainctl {

// The variables, and their values, that switch torch's flight recorder on for the ranks
// of a node whose private node-state directory is `state_dir`: a buffer of entries (not
// bytes), a dump on NCCL's own timeout, the dump files and NCCL's request pipe in that
// directory (torch's defaults lie in /tmp, where anyone can plant them). The caller sets
// each only where the user has not.
std::vector<std::pair<std::string, std::string>> flight_recorder_env(const std::string& state_dir);

// Removes the files of the rank process `pid` in `rank_dir` (its FIFO and answers,
// fr.<pid>.*), where they are this user's: a rank ended by a signal (a hang's end-step,
// SLURM's kill) never removes its own, and the directory outlives the job.
void remove_flight_recorder_files(const std::string& rank_dir, pid_t pid) noexcept;

// One rank's dump, asked for through its FIFO fr.<pid>.pipe in `rank_dir` (the rank's
// node-state directory) and read back from fr.<pid>.txt and fr.<pid>.pkl there.
class flight_recorder_request {
 public:
  // Asks; a rank that listens on no FIFO there (no torch.distributed, no trainctl
  // package, or an old one) is not asked, and collect() then gives nothing.
  flight_recorder_request(std::string rank_dir, pid_t pid);
  flight_recorder_request(const flight_recorder_request&) = delete;
  flight_recorder_request& operator=(const flight_recorder_request&) = delete;
  flight_recorder_request(flight_recorder_request&&) = default;
  flight_recorder_request& operator=(flight_recorder_request&&) = default;
  ~flight_recorder_request() = default;

  bool asked() const { return asked_; }
  // Whether the rank's answer is there (whole: it renames it into place).
  bool answered() const;
  // The rank's digest lines ("pg=0 seq=12 done=0 op=all_reduce at=train.py:88 in=float32
  // x 4" or "none WHY"); when it did not answer, one "none ..." line that says so. Empty
  // when it was not asked. `*dump` gets torch's pickled dump, when there is one.
  std::vector<std::string> collect(std::string* dump) const;

 private:
  std::string dir_, stem_;
  bool asked_ = false;
  std::chrono::steady_clock::time_point at_;
};

}  // namespace trainctl
