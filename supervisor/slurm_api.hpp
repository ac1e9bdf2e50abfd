// The job's record from the controller through libslurm: one RPC (REQUEST_JOB_INFO_SINGLE,
// SHOW_LOCAL: no federation lookup) and no process, where `scontrol show job` costs two
// RPCs and a fork and exec. libslurm is loaded at the first query, never at start: a
// short step never pays for it, and a node without the library (libslurm is its own
// package, which slurmd does not need) falls back to scontrol.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "slurm_job.hpp"

namespace trainctl {

// Loads libslurm once (thread-safe). False with `why` set when it is not there.
bool slurm_api_ready(std::string* why);

// One job record, blocking for at most the controller's MessageTimeout; call it off the
// supervisor's loop (slurm_job_reader does). nullopt with `error` set on failure.
std::optional<job_times> slurm_api_load_job(const std::string& job_id, std::string* error);

// One query at a time in a thread of its own; the loop waits on fd() and takes the
// answer. An abandoned query (past its deadline) is forgotten; a new one starts only
// when the thread of the old one has returned.
class slurm_job_reader {
 public:
  slurm_job_reader();
  ~slurm_job_reader();
  slurm_job_reader(const slurm_job_reader&) = delete;
  slurm_job_reader& operator=(const slurm_job_reader&) = delete;

  int fd() const;  // readable when an answer is in
  // False with `error` set when the previous thread has not returned yet.
  bool start(const std::string& job_id, std::string* error);
  // The answer, once: outer nullopt while none is in; inner nullopt (with `error`) when
  // the query failed.
  std::optional<std::optional<job_times>> take(std::string* error);
  void abandon();  // the answer of the query in flight is thrown away when it comes

 private:
  struct shared;
  std::shared_ptr<shared> s_;
};

}  // namespace trainctl
