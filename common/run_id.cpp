#include "run_id.hpp"

#include <cctype>
#include <ctime>

#include "env_names.hpp"
#include "run_event_kinds.hpp"
#include "run_events.hpp"
#include "time_text.hpp"

namespace trainctl {

bool valid_run_id(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  for (const char c : id)
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_' && c != '.' && c != '-') return false;
  return true;
}

namespace {

// 1796225154000 -> "20261202T152554" (UTC: the same on every node, whatever its TZ).
std::string utc_stamp(std::int64_t unix_ms) { return time_text(unix_ms / 1000, "%Y%m%dT%H%M%S", time_zone::utc); }

}  // namespace

std::string run_id(const env_lookup& env, std::int64_t since_ms) {
  std::string own = env(kRunIdVar);
  if (valid_run_id(own)) return own;
  std::string job = env(env_var::kSlurmArrayJobId);
  if (job.empty()) job = env(env_var::kSlurmJobId);
  if (job.empty() || job.find_first_not_of("0123456789") != std::string::npos) return "";
  if (since_ms > 0) job += "-" + utc_stamp(since_ms);
  // A cluster name that could not be part of an id is left out rather than mangled.
  const std::string cluster = env(env_var::kSlurmClusterName);
  const std::string id = (valid_run_id(cluster) ? cluster + "-" : std::string()) + job;
  return valid_run_id(id) ? id : job;
}

std::int64_t array_since(std::int64_t own_submit_ms, std::int64_t restart, const std::vector<run_event>& events) {
  if (own_submit_ms <= 0) return 0;
  if (restart <= 0) return own_submit_ms;
  std::int64_t since = 0;
  for (const run_event& e : events) {
    const std::int64_t s = e.figure("since", 0);
    if (e.what == run_event_kind::kTaskStart && e.restart == 0 && s > since && s <= own_submit_ms) since = s;
  }
  return since;
}

}  // namespace trainctl
