// trainctl status: where every rank of a running job is, read from what the ranks already
// publish in their node state (heartbeat, step, work per step) and what SLURM says of
// the job. Reading costs the ranks nothing: no signal, no collective, a shared-memory
// copy on each node.
//
// Two halves. On each node of the job, the probe (probes/status_probe.hpp, a task of
// `srun --overlap`) prints this node's part as lines; here, on the login node, the lines
// of all nodes are parsed into a job_status and shown as a table or JSON.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace trainctl {

struct status_rank {
  std::string node;
  int rank = -1;
  int pid = 0;
  std::int64_t step = -1;
  std::int64_t since_check_ms = -1;           // -1: no check() yet
  std::int64_t step_us = 0;                   // work per step in the last agreement window; 0: unknown
  int slow = 0;                               // agreements in a row this rank was the slowest
  int agreements = 5;                         // how many in a row make it a straggler (its setting)
  std::uint64_t mem_free = 0, mem_limit = 0;  // its memory domain; 0: unknown
  double factor = 0;                          // step_us against the fastest rank's; 0: unknown
};

struct status_node {
  std::string node;
  std::uint32_t flags = 0;
  std::int64_t deadline_in_ms = 0;  // from the node's own clock; only when has_deadline
  bool has_deadline = false;
  std::int64_t deadline_ms = 0;  // unix ms
  bool supervised = false;
  std::int64_t published_age_ms = -1;
  std::int64_t longest_save_ms = 0;  // the longest save of a rank here, from its decision; 0: none
};

struct status_switch {
  std::string node, kind, name, path;
  bool present = false;
  std::int64_t touches = 0;
};

// What SLURM says of the job (scontrol show job), filled by the caller.
struct status_job {
  std::string id, name, state, node_list;
  std::int64_t end_ms = 0;  // EndTime, unix ms; 0 unknown
  std::int64_t now_ms = 0;  // when the view was made (the login node's clock)
};

// A rank process of the job that died of an error its loop noted (rank_beat::error),
// while the job runs on (a launcher restarting its workers, or the step ending).
struct status_death {
  std::string node, error;
  int rank = -1;
  int pid = 0;
};

struct job_status {
  status_job job;
  std::vector<status_node> nodes;
  std::vector<status_rank> ranks;  // sorted by rank
  std::vector<status_death> deaths;
  std::vector<status_switch> switches;
  std::vector<std::string> errors;  // "host: text"
  std::vector<std::string> other;   // lines that are none of the above (srun's own)
};

// The lines of every node (probes/status_probe.hpp says what they hold); factors computed across all ranks. Host
// names that are not node names are dropped with an error, never shown.
job_status parse_status_lines(const std::string& text, const status_job& job);

// Findings worth a line each: stragglers (as many agreements in a row as the rank's
// setting), a hang flagged by a supervisor, notices. Empty: nothing found.
std::vector<std::string> status_findings(const job_status& s);

// The table people read (stdout), and the same for dashboards as one JSON document.
std::string format_status_table(const job_status& s);
// `lines`: one document per line (JSON Lines, for --watch), else indented.
std::string format_status_json(const job_status& s, bool lines = false);

// trainctl status with no JOB: one row per running job of the caller that trainctl
// supervises (a node state was found on its nodes: id, name, nodes, ranks, deadline,
// findings), then one line naming the caller's other running jobs; `unsupervised`
// holds their ids. The JSON carries "schema": 1.
// `held`: the caller's pending jobs that are held ("4242_[2-5] JobHeldUser" each), as
// trainctl's kill switch leaves an array's pending tasks.
std::string format_job_list(const std::vector<job_status>& jobs, const std::vector<std::string>& unsupervised,
                            const std::vector<std::string>& held);
std::string format_job_list_json(const std::vector<job_status>& jobs, const std::vector<std::string>& unsupervised,
                                 const std::vector<std::string>& held);

}  // namespace trainctl
