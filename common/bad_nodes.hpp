// Bad-node memory: nodes where this user's task crashed, hung or straggled, with why,
// when and the GPUs it had, so that the next array task keeps off them for a while.
// One line per finding, appended to a per-user file (on the shared home, so every
// node and login node reads the same):
//   <unix seconds> <host> job=<id> gpus=<uuids or -> reason=<text>
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "user_paths.hpp"

namespace trainctl {

struct bad_node {
  std::int64_t when = 0;  // unix seconds
  std::string host, job, gpus, reason;
};

// How long a finding keeps a node off: TRAINCTL_BAD_NODE_EXPIRY (a duration, hours by
// default), else 24 h; a malformed value counts as 24 h (`trainctl bad-nodes` says so).
std::chrono::seconds bad_node_expiry();

// Appends one finding (creating the directory, 0700). Returns "" or why it could not;
// a host that is not valid_node_name is refused.
std::string record_bad_node(const std::string& path, const bad_node& b);

// Takes every finding about `host` out of the memory (the file is rewritten under its
// lock and replaced by rename). Returns "" or why it could not; *removed says how many.
std::string forget_bad_node(const std::string& path, const std::string& host, std::size_t* removed);
// The same for every finding `which` selects; *forgotten (may be null) gets them.
std::string forget_findings(const std::string& path, const std::function<bool(const bad_node&)>& which,
                            std::size_t* removed, std::vector<bad_node>* forgotten = nullptr);
// Every well-formed line of the file (others, and hosts that are not one valid node
// name, are skipped); empty when it is missing.
std::vector<bad_node> read_bad_nodes(const std::string& path);

// A crash in a one-node job has nothing to compare with: the fault may be the node's or
// the program's (an abort is a C++ assert as often as NCCL's answer to a bad GPU). It is
// remembered as a suspicion, its reason starting with kSuspectedCrash, and keeps nobody
// off a node, however many there are: on an idle cluster SLURM places every one-node
// job on the same node first, so a user's own crashing programs pile up there. A node
// is convicted only by contrast: its ranks died first while the same job's ranks on
// other nodes did not (crash_culprit.hpp). The array a suspicion's job belongs to is
// named in the reason after kOfArray.
inline constexpr const char* kSuspectedCrash = "crashed, suspected";
inline constexpr const char* kOfArray = " of array ";
bool is_suspicion(const bad_node& b);

// A conviction's reason names how the first rank died, which rank it was (-1: not
// known, the rank died before its first check()) and, in an array, the array (the
// program): "crashed (SIGSEGV in rank 5 of array 123, the first death of the job; LEAD)".
std::string crash_finding_reason(const std::string& how, int rank, const std::string& array, const std::string& lead);
// Whether `b` convicted another host than `host` because rank `rank` of array `array`
// died first there. When it did and that rank dies first again here, the crash follows
// the rank to whichever node it runs on: the program's (its data shard, its part of the
// model), not a node's.
bool same_rank_died_first_elsewhere(const bad_node& b, const std::string& host, int rank, const std::string& array);
// A straggler finding's reason, written by the node's supervisor (straggler_record.hpp)
// and read back by `trainwatch slow-nodes`: "slow (rank 3, x2.50 the fastest rank's step
// time)". parse_straggler_reason: false for any other reason (rank -1 and factor 0 then).
std::string straggler_reason(int rank, double factor);
bool parse_straggler_reason(const std::string& reason, int* rank, double* factor);
// How such a crash is remembered (a suspicion), at the end of its reason: the program's
// fault, so it is no evidence against a node either (bad_node_contrast.hpp).
inline constexpr const char* kFollowsTheRank = "the crash follows the rank, not a node)";

// The hosts to keep off: findings younger than `expiry` (never suspicions),
// newest first, each host once, at most `cap` of them (so a run never excludes itself
// off the cluster).
std::vector<std::string> nodes_to_exclude(const std::vector<bad_node>& all, std::int64_t now_s,
                                          std::chrono::seconds expiry, std::size_t cap);
// The hosts with recent suspicions and no finding, newest first.
std::vector<std::string> suspected_nodes(const std::vector<bad_node>& all, std::int64_t now_s,
                                         std::chrono::seconds expiry);

}  // namespace trainctl
