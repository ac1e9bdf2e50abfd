// What the supervisor asks the controller about its job: when it ends, its time limit
// and whether it is being preempted. One `scontrol show job -o` per question, under a
// timeout, so a slow or dead controller never hangs the supervisor.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainctl {

struct job_times {
  std::int64_t end_ms = 0;    // EndTime as unix ms; 0 when unknown
  std::int64_t limit_s = -1;  // TimeLimit in seconds; -1 UNLIMITED or unknown
  bool preempting = false;    // PreemptTime is set: preemption has begun
  bool requeue = false;       // Requeue=1: the job may be requeued
  std::string state;          // JobState
};

// Parses one line of `scontrol show job -o`. Times are local time, as scontrol prints
// them for this process's TZ. nullopt when the line is not a job record.
std::optional<job_times> parse_scontrol_job(const std::string& line);

// "UNLIMITED", "30", "10:00", "1:00:00", "2-00", "2-12:00", "2-12:00:00" -> seconds; -1 for
// UNLIMITED / Partition_Limit; throws parse_error otherwise.
std::int64_t parse_slurm_duration(const std::string& text);

// "2026-11-22T07:22:34" (local time) -> unix ms; 0 for "Unknown"/"None"/"N/A".
std::int64_t parse_slurm_timestamp(const std::string& text);

// NAME's value in one line of `scontrol show ... -o` ("" when absent).
std::string scontrol_field(const std::string& line, const std::string& name);
// `scontrol show KIND -o ID` (job, partition) with a timeout: its one line, or nullopt
// with `error` saying why in one line.
std::optional<std::string> scontrol_show(const std::string& kind, const std::string& id,
                                         std::chrono::milliseconds timeout, std::string* error);

// Runs `scontrol show job -o JOB` with a timeout. nullopt when it failed or timed out;
// `error` then says why in one line.
std::optional<job_times> query_job(const std::string& job_id, std::chrono::milliseconds timeout, std::string* error);

// `scontrol requeue JOB`: puts a job that was preempted (and ended early, after its
// ranks saved) back in the queue. False with `error` set when it failed.
bool requeue_job(const std::string& job_id, std::chrono::milliseconds timeout, std::string* error);

}  // namespace trainctl
