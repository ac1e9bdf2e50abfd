// SLURM's text as scontrol prints it: a job's one line (`scontrol show job -o`), its
// durations and its local timestamps. Parsing only, no process started: what the
// supervisor's queries, the libslurm child's fallback and the verbs all read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace trainctl {

struct job_times {
  std::int64_t end_ms = 0;     // EndTime as unix ms; 0 when unknown
  std::int64_t start_ms = 0;   // StartTime of this run of the job as unix ms; 0 when unknown
  std::int64_t submit_ms = 0;  // SubmitTime as unix ms (SLURM sets it anew at a requeue); 0 when unknown
  std::int64_t limit_s = -1;   // TimeLimit in seconds; -1 UNLIMITED or unknown
  bool preempting = false;     // PreemptTime is set: preemption has begun
  bool requeue = false;        // Requeue=1: the job may be requeued
  std::string state;           // JobState
};

// Parses one line of `scontrol show job -o`. Times are local time, as scontrol prints
// them for this process's TZ. nullopt when the line is not a job record.
std::optional<job_times> parse_scontrol_job(const std::string& line);

// "UNLIMITED", "30", "10:00", "1:00:00", "2-00", "2-12:00", "2-12:00:00" -> seconds; -1 for
// UNLIMITED / Partition_Limit; throws parse_error otherwise.
std::int64_t parse_slurm_duration(const std::string& text);

// "2026-11-22T07:22:34" (local time) -> unix ms; 0 for "Unknown"/"None"/"N/A".
std::int64_t parse_slurm_timestamp(const std::string& text);
// The other way: unix ms -> "2026-11-22T07:22:34" in local time, as SLURM prints it.
std::string format_slurm_timestamp(std::int64_t unix_ms);

// NAME's value in one line of `scontrol show ... -o` ("" when absent).
std::string scontrol_field(const std::string& line, const std::string& name);

}  // namespace trainctl
