#include "cluster_config.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "parse.hpp"
#include "slurm_job.hpp"
#include "subprocess.hpp"

namespace trainctl {
namespace {

std::int64_t duration_or(const std::string& text, std::int64_t otherwise) {
  if (text.empty() || text == "NONE" || text == "n/a") return otherwise;
  try {
    return parse_slurm_duration(text);
  } catch (const parse_error&) {
    return otherwise;
  }
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

}  // namespace

cluster_facts parse_scontrol_config(const std::string& output) {
  cluster_facts c;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (key == "PreemptType") c.preempt_type = value;
    if (key == "PreemptMode") c.preempt_mode = value;
    if (key == "JobRequeue") c.job_requeue = value != "0";
  }
  return c;
}

partition_facts parse_scontrol_partition(const std::string& line) {
  partition_facts p;
  p.name = scontrol_field(line, "PartitionName");
  p.preempt_mode = scontrol_field(line, "PreemptMode");
  // GraceTime is printed in seconds, where the limits are SLURM durations (minutes bare).
  p.grace_s = std::max<std::int64_t>(0, std::strtoll(scontrol_field(line, "GraceTime").c_str(), nullptr, 10));
  p.default_time_s = duration_or(scontrol_field(line, "DefaultTime"), -1);
  p.max_time_s = duration_or(scontrol_field(line, "MaxTime"), -1);
  return p;
}

std::string default_partition(const std::string& output) {
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line))
    if (scontrol_field(line, "Default") == "YES") return scontrol_field(line, "PartitionName");
  return "";
}

std::optional<cluster_facts> read_cluster_facts(const std::string& partition, std::chrono::milliseconds timeout,
                                                std::string* why, bool* no_partition) {
  child_spec config;
  config.argv = {"scontrol", "show", "config"};
  config.deadline = timeout;
  config.merge_stderr = true;
  const child_result r = run_child(config);
  if (!r.ok()) {
    const std::string said = r.output.substr(0, r.output.find('\n'));
    *why = said.empty() ? r.error : "scontrol show config: " + said;
    return std::nullopt;
  }
  cluster_facts c = parse_scontrol_config(r.output);
  child_spec parts;
  parts.argv = {"scontrol", "show", "partition", "-o"};
  parts.deadline = timeout;
  const child_result p = run_child(parts);
  if (!p.ok()) {
    *why = "scontrol show partition: " + p.error;
    return std::nullopt;
  }
  const std::string name = partition.empty() ? default_partition(p.output) : partition;
  std::string names;
  std::istringstream in(p.output);
  std::string line;
  while (std::getline(in, line)) {
    const std::string each = scontrol_field(line, "PartitionName");
    if (each == name) c.partition = parse_scontrol_partition(line);
    if (!each.empty()) names += (names.empty() ? "" : ", ") + each;
  }
  if (c.partition.name.empty()) {
    *why = name.empty()
               ? "the cluster has no default partition; accepted: --partition=NAME, one of " + names
               : "--partition=" + name.substr(0, 60) + ": the cluster has no such partition; accepted: " + names;
    if (no_partition != nullptr) *no_partition = true;
    return std::nullopt;
  }
  return c;
}

}  // namespace trainctl
