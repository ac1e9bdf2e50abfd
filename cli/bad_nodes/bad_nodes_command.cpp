// trainctl bad-nodes: the nodes the next
// task should keep off, remembering one, forgetting one. Runs where the user is: on a
// login node, or in the batch script before srun.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>
#include <string>

#include "bad_nodes.hpp"
#include "commands.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "gpu_memory.hpp"
#include "job_access.hpp"
#include "node_names.hpp"
#include "parse.hpp"
#include "slurm_job.hpp"

namespace trainctl::commands {

namespace {

// How many nodes a job may keep off when --cap is not given: inside a job, what its
// partition can spare (its nodes minus the job's); else 4. *why says which.
long long default_cap(std::string* why) {
  if (!env_text(env_var::kSlurmJobId).empty()) {
    const std::chrono::milliseconds timeout(10000);
    const auto job = show_job_record(env_text(env_var::kSlurmJobId), timeout, nullptr);
    const std::string partition = job ? job->partition : "";
    const auto part = job ? scontrol_show("partition", partition, timeout, nullptr) : std::nullopt;
    if (part) {
      const long long total = std::atoll(scontrol_field(*part, "TotalNodes").c_str());
      const long long need = std::atoll(job->num_nodes.c_str());
      *why = "partition " + partition + " has " + std::to_string(total) + " nodes and the job needs " +
             std::to_string(need);
      return std::max(0LL, total - need);
    }
  }
  *why = "at most 4 outside a job";
  return 4;
}

// The newest record of `host`, or nullptr.
const bad_node* newest_of(const std::vector<bad_node>& all, const std::string& host) {
  for (auto it = all.rbegin(); it != all.rend(); ++it)
    if (it->host == host) return &*it;
  return nullptr;
}

}  // namespace

// trainctl bad-nodes: the hosts the next task should keep off, comma separated, on stdout;
// one line per host on stderr says why. The cap keeps enough of the partition for the
// job: its node count minus the job's, unless --cap says less.
int print_bad_nodes(const std::string& who, const std::string& cap_option, const std::string& expiry_text,
                    const std::string& cap_text, bool json) {
  using namespace trainctl;
  std::chrono::milliseconds expiry{};
  long long cap = -1;
  const std::string expiry_option = "--expiry";
  try {
    expiry = parse_duration(expiry_text, 'h');
  } catch (const parse_error& e) {
    std::fprintf(stderr, "%s: %s: %s\n", who.c_str(), expiry_option.c_str(), e.what());
    return 2;
  }
  try {
    if (!cap_text.empty()) cap = parse_int(cap_text, 0, 100000);
  } catch (const parse_error& e) {
    std::fprintf(stderr, "%s: %s: %s\n", who.c_str(), cap_option.c_str(), e.what());
    return 2;
  }
  std::string why_cap = cap_option;
  if (cap < 0) cap = default_cap(&why_cap);
  const std::string path = bad_nodes_path();
  const auto all = read_bad_nodes(path);
  const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
  const auto keep_off = nodes_to_exclude(all, now, std::chrono::duration_cast<std::chrono::seconds>(expiry),
                                         static_cast<std::size_t>(cap));
  const auto every = nodes_to_exclude(all, now, std::chrono::duration_cast<std::chrono::seconds>(expiry), 1 << 20);
  const auto suspects = suspected_nodes(all, now, std::chrono::duration_cast<std::chrono::seconds>(expiry));
  if (json) {
    nlohmann::json j;
    j["schema"] = 1;
    j["exclude"] = keep_off;
    j["nodes"] = nlohmann::json::array();
    std::vector<std::string> listed = every;
    listed.insert(listed.end(), suspects.begin(), suspects.end());
    for (const auto& host : listed)
      if (const bad_node* b = newest_of(all, host))
        j["nodes"].push_back({{"host", host},
                              {"reason", b->reason},
                              {"when", b->when},
                              {"age_s", now - b->when},
                              {"job", b->job},
                              {"gpus", b->gpus},
                              {"excluded", std::find(keep_off.begin(), keep_off.end(), host) != keep_off.end()},
                              {"suspected", is_suspicion(*b)}});
    j["cap"] = cap;
    j["why_cap"] = why_cap;
    std::printf("%s\n", j.dump(2).c_str());
    return 0;
  }
  std::string list;
  for (const auto& host : keep_off) {
    list += (list.empty() ? "" : ",") + host;
    if (const bad_node* b = newest_of(all, host))
      std::fprintf(stderr, "%s: keeping off %s: %s, %llds ago (job %s)\n", who.c_str(), host.c_str(), b->reason.c_str(),
                   static_cast<long long>(now - b->when), b->job.c_str());
  }
  if (every.size() > keep_off.size())
    std::fprintf(stderr, "%s: %zu more bad node%s not excluded (%s)\n", who.c_str(), every.size() - keep_off.size(),
                 every.size() - keep_off.size() == 1 ? "" : "s", why_cap.c_str());
  for (const auto& host : suspects)
    if (const bad_node* b = newest_of(all, host))
      std::fprintf(stderr, "%s: not keeping off %s, only suspected: %s, %llds ago (job %s)\n", who.c_str(),
                   host.c_str(), b->reason.c_str(), static_cast<long long>(now - b->when), b->job.c_str());
  std::printf("%s\n", list.c_str());
  return 0;
}

// mark: a node into the bad-node memory, for a health check that failed (the template's
// HEALTH_CHECK, or a user's own prolog script); this node when `host` is empty.
int mark_bad_node(const std::string& who, const std::string& what, const std::string& host, const std::string& reason) {
  using namespace trainctl;
  if (reason.find('\n') != std::string::npos || reason.empty()) {
    std::fprintf(stderr, "%s: %s: the reason is %s; accepted: one line of text\n", who.c_str(), what.c_str(),
                 reason.empty() ? "empty" : "more than one line");
    return 2;
  }
  bad_node b;
  b.when = static_cast<std::int64_t>(std::time(nullptr));
  b.host = host.empty() ? node_name() : host;
  b.job = env_text(env_var::kSlurmJobId).empty() ? "-" : env_text(env_var::kSlurmJobId);
  // The GPUs are this node's: said only when it is this node that is marked.
  if (b.host == node_name()) b.gpus = gpu_uuids();
  b.reason = reason;
  const std::string path = bad_nodes_path(), why = record_bad_node(path, b);
  if (!why.empty()) {
    std::fprintf(stderr, "%s: %s: %s\n", who.c_str(), what.c_str(), why.c_str());
    return valid_node_name(b.host) ? 1 : 2;
  }
  std::fprintf(stderr, "%s: remembered %s as a bad node (%s) in %s\n", who.c_str(), b.host.c_str(), reason.c_str(),
               path.c_str());
  return 0;
}

// forget: every finding about `host` out of the bad-node memory (a node repaired).
int forget_bad_node(const std::string& who, const std::string& host) {
  using namespace trainctl;
  const std::string path = bad_nodes_path();
  std::size_t removed = 0;
  const std::string why = trainctl::forget_bad_node(path, host, &removed);
  if (!why.empty()) {
    std::fprintf(stderr, "%s: bad-nodes forget %s: %s\n", who.c_str(), host.c_str(), why.c_str());
    return valid_node_name(host) ? 1 : 2;
  }
  std::fprintf(stderr, "%s: %s: %zu finding%s forgotten (%s)\n", who.c_str(), host.c_str(), removed,
               removed == 1 ? "" : "s", path.c_str());
  return 0;
}

}  // namespace trainctl::commands
