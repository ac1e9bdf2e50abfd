// What the cluster says about preemption and time limits, for `trainctl lint`: the
// controller's configuration (`scontrol show config`) and one partition's record
// (`scontrol show partition -o`). Read on a login node as the user; nothing is cached.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace trainctl {

struct partition_facts {
  std::string name;
  std::string preempt_mode;          // "OFF", "CANCEL", "REQUEUE", "SUSPEND", "GANG,SUSPEND"...
  std::int64_t grace_s = 0;          // GraceTime: from the preemption notice to SIGKILL
  std::int64_t default_time_s = -1;  // DefaultTime; -1 none or unlimited
  std::int64_t max_time_s = -1;      // MaxTime; -1 unlimited
};

struct cluster_facts {
  std::string preempt_type;  // "preempt/none", "preempt/partition_prio", "preempt/qos"
  std::string preempt_mode;  // the cluster's PreemptMode
  bool job_requeue = true;   // JobRequeue: jobs are requeueable unless they say --no-requeue
  partition_facts partition;
  bool preempts() const { return !preempt_type.empty() && preempt_type != "preempt/none"; }
};

// `scontrol show config` output ("Key = Value" lines) into what lint reads.
cluster_facts parse_scontrol_config(const std::string& output);
// One line of `scontrol show partition -o`.
partition_facts parse_scontrol_partition(const std::string& line);
// The partition marked Default=YES in `scontrol show partition -o` output; "" if none.
std::string default_partition(const std::string& output);

// The cluster's facts for `partition` (the default one when empty): nullopt with *why
// (one line) when the controller cannot be reached, or it has no such partition (then
// *no_partition is set, and *why names the partitions it has).
std::optional<cluster_facts> read_cluster_facts(const std::string& partition, std::chrono::milliseconds timeout,
                                                std::string* why, bool* no_partition = nullptr);

}  // namespace trainctl
