// The trainwatch checks. Each returns results (one per target) and never hangs:
// blocking calls run under a deadline they can abandon.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "cgroup_memory.hpp"
#include "check_result.hpp"
#include "parse.hpp"

namespace trainctl {

// --- fs -------------------------------------------------------------------------------
struct fs_target {
  std::string path;
  threshold min_free, warn_free;                // space
  threshold min_free_inodes, warn_free_inodes;  // inodes
  double capacity = 1.0;                        // effective capacity factor (0.8: 80% is full)
  std::string quota_command;                    // e.g. "lfs quota -q -u $USER /scratch"
  std::chrono::milliseconds timeout{5000};
};
struct fs_reading {
  std::uint64_t total = 0, free = 0;  // bytes (free to unprivileged users)
  std::uint64_t inodes = 0, ifree = 0;
};
std::vector<check_result> check_fs(const std::vector<fs_target>& targets, const std::string& state_dir);
// Pieces for tests and fuzzing.
std::optional<fs_reading> parse_fs_reading(const std::string& text);
struct quota_reading {
  std::uint64_t used = 0, limit = 0;  // bytes (limit: hard, else soft; 0 none)
  std::uint64_t files = 0, files_limit = 0;
};
// `lfs quota -q` / `quota -w` style lines: filesystem, kbytes used, quota, limit, grace,
// files, quota, limit, grace; values may carry a '*' when over.
std::optional<quota_reading> parse_quota_output(const std::string& text);
// Seconds until full at the rate seen in the history (time, used) points; nullopt when
// not growing or not enough history.
std::optional<double> runway_seconds(const std::vector<std::pair<double, double>>& history, double capacity_bytes);

// --- job-running --------------------------------------------------------------------------
struct job_row {
  std::string id, state, reason, name;
};
// `squeue -h -o %i|%T|%r|%j` lines (the name last: it may contain '|').
std::vector<job_row> parse_squeue(const std::string& text);
std::vector<check_result> check_job_running(const std::vector<std::string>& names, const std::string& user,
                                            std::chrono::milliseconds timeout);
std::string explain_pending(const std::string& reason);
// The newest ended job in sacct -X -n -P -o JobID,State,ExitCode,End output, as one
// clause for a CRITICAL job-running line ("the last one, 12_4, ended FAILED with exit
// status 93: ..."); "" when there is none.
std::string last_ended_clause(const std::string& sacct_output);

// --- log-stall -------------------------------------------------------------------------------
struct log_stall_options {
  std::vector<std::string> patterns;
  std::chrono::milliseconds max_age{std::chrono::minutes(30)};
  std::string save_marker;  // while it exists, save_max_age applies
  std::chrono::milliseconds save_max_age{std::chrono::hours(2)};
};
check_result check_log_stall(const log_stall_options& o);

// --- memory ----------------------------------------------------------------------------------
struct memory_options {
  threshold min_available, warn_available;  // e.g. 5% / 10% or 2G
  std::string root;                         // fixture root for tests
  std::chrono::hours leak_horizon{24};      // WARNING when the trend reaches the limit within this
};
check_result check_memory(const memory_options& o, const std::string& state_dir);
// The thresholds and the leak trend (kept per `target` in state_dir) on one reading.
check_result judge_memory(const memory_reading& m, const memory_options& o, const std::string& state_dir,
                          const std::string& target);

// --job NAME: the memory of a running job of this user on each of its nodes, measured by
// `trainwatch memory --here` run beside its steps (srun --overlap: in the job's cgroup).
// One result per node, target "NAME on NODE"; UNKNOWN when a node gave no reading (no
// running job of that name is OK: nothing to measure; job-running alerts on it).
// `here_lines`: what the helpers printed, one "<node> <used bytes> <limit bytes>
// <source>" line each; `nodes`: the job's node count.
std::vector<check_result> judge_job_memory(const std::string& name, const std::string& job, int nodes,
                                           const std::string& here_lines, const memory_options& o,
                                           const std::string& state_dir);
// The line `trainwatch memory --here` prints for this node's reading.
std::string memory_here_line(const memory_reading& m);

// --- nodes: stragglers and bad nodes ---------------------------------------------------------
struct slow_node {
  std::int64_t when = 0;
  std::string host, rank, job;
  double factor = 0;
};
// The lines of a slow_nodes file (as the library writes them); malformed ones skipped.
std::vector<slow_node> parse_slow_nodes(const std::string& text);
// WARNING when a straggler was reported within `max_age` (named: host, rank, factor);
// OK when none (also when the file does not exist: it appears with the first one). When
// something other than this user's regular file is under the name, it is skipped (one
// line) and the stragglers come from the bad-node memory `bad_nodes_file` (default
// bad_nodes_path()) instead; UNKNOWN only when the user's own file cannot be read.
check_result check_slow_nodes(const std::string& path, std::chrono::milliseconds max_age, std::int64_t now_s,
                              const std::string& bad_nodes_file = "");
// WARNING when a job of `name` runs on a node remembered as bad (bad_nodes, not expired):
// the node came back into the job's allocation. `nodes` are the job's hosts.
check_result check_bad_node_back(const std::string& name, const std::vector<std::string>& nodes,
                                 const std::string& bad_nodes_file, std::chrono::seconds expiry, std::int64_t now_s);

}  // namespace trainctl
