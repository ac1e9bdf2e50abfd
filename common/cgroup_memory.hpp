// The memory domain a process lives in: the tightest cgroup limit above it (cgroup v2
// or v1), or else the node (MemAvailable). Used by libtrainctl's memory flag and by
// trainwatch's memory check. Every path is read below `root` so tests can point it at
// a fixture tree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "parse.hpp"

namespace trainctl {

struct memory_reading {
  std::uint64_t limit = 0;  // bytes the domain may use
  std::uint64_t used = 0;   // working set: usage minus reclaimable inactive file cache
  std::string source;       // "cgroup v2 /slurm/job_1", "cgroup v1 /...", "node"
  std::uint64_t available() const { return used < limit ? limit - used : 0; }
  double used_percent() const { return limit ? 100.0 * static_cast<double>(used) / static_cast<double>(limit) : 0; }
};

// Reads the memory domain of process `pid` ("self" by default). Returns nullopt when
// nothing could be read (no /proc); never throws. `whole_job`: from SLURM's cgroup of the
// job the process is in (job_<id>), not of its step: what all the job's steps use.
std::optional<memory_reading> read_memory(const std::string& root = "", const std::string& pid = "self",
                                          bool whole_job = false);
// The path of SLURM's job cgroup above `path` (up to its job_<id> part), else `path`.
std::string job_cgroup_of(const std::string& path);

// True when less is left than the threshold: a percentage of the limit, or `bytes`
// (the same meaning as every other threshold in trainctl).
bool memory_crossed(const memory_reading& r, const threshold& t);

// Where the kernel counts the processes the OOM killer ended in process `pid`'s memory
// domain: its own memory cgroup (v2 memory.events, v1 memory.oom_control: "oom_kill N";
// a rank stays in its supervisor's cgroup), else the node (/proc/vmstat). The kernel
// counts a kill before it sends the SIGKILL, so the count has risen by the time anyone
// sees the death. No cgroup walk on reading: the path is found once.
struct oom_counter {
  std::string path;    // the file ("" when there is none: a kernel before 4.13)
  std::string source;  // "cgroup v1 /slurm_n1/uid_0/job_2/step_0/task_0", "node"
};
oom_counter find_oom_counter(const std::string& root = "", const std::string& pid = "self");
// The count now; nullopt when it cannot be read.
std::optional<std::uint64_t> read_oom_kills(const oom_counter& c);

// Pieces exposed for tests and fuzzing.
std::optional<std::uint64_t> meminfo_field(const std::string& meminfo_text, const std::string& field);
std::optional<std::uint64_t> memory_stat_field(const std::string& stat_text, const std::string& field);

}  // namespace trainctl
