#include "bad_node_contrast.hpp"

#include <map>
#include <set>
#include <string_view>

#include "node_names.hpp"
#include "run_event_kinds.hpp"

namespace trainctl {

namespace {
constexpr const char* kByContrast = "crashed in programs that ran cleanly on other nodes (";
}  // namespace

std::string suspicion_array(const bad_node& b) {
  if (!is_suspicion(b)) return "";
  const std::size_t at = b.reason.find(kOfArray);
  if (at == std::string::npos) return "";
  std::size_t end = at + std::string(kOfArray).size(), from = end;
  while (end < b.reason.size() && b.reason[end] >= '0' && b.reason[end] <= '9') ++end;
  return b.reason.substr(from, end - from);
}

namespace {

// The program each run of an array ran (its first_step's figure), by job id.
std::map<std::string, std::int64_t> programs_by_job(const std::vector<run_event>& events) {
  std::map<std::string, std::int64_t> out;
  for (const run_event& e : events)
    if (e.what == run_event_kind::kFirstStep && e.figure("program") >= 0) out[e.job] = e.figure("program");
  return out;
}

}  // namespace

std::vector<clean_elsewhere> programs_clean_elsewhere(
    const std::string& host, const std::vector<bad_node>& recent,
    const std::function<std::vector<run_event>(const std::string& array)>& events_of) {
  std::map<std::string, std::set<std::string>> crashed_jobs;  // array -> its runs that crashed here
  std::set<std::string> crashed_elsewhere;
  for (const bad_node& b : recent) {
    const std::string array = suspicion_array(b);
    const std::string_view reason(b.reason), follows(kFollowsTheRank);
    const bool program_fault =
        reason.size() >= follows.size() && reason.substr(reason.size() - follows.size()) == follows;
    if (array.empty() || program_fault) continue;
    if (b.host == host)
      crashed_jobs[array].insert(b.job);
    else
      crashed_elsewhere.insert(array);
  }
  std::vector<clean_elsewhere> out;
  for (const auto& [array, jobs] : crashed_jobs) {
    if (crashed_elsewhere.count(array) != 0) continue;
    const std::vector<run_event> events = events_of(array);
    const std::map<std::string, std::int64_t> program = programs_by_job(events);
    // The programs that crashed here: a run that never reached its first step ran no
    // program anyone can name, and proves nothing.
    std::set<std::int64_t> crashed;
    for (const std::string& job : jobs)
      if (program.count(job) != 0) crashed.insert(program.at(job));
    for (const run_event& e : events) {
      const auto ran = program.find(e.job);
      if (e.what == run_event_kind::kTaskEnd && e.reason == "ok" && !e.node.empty() && e.node != host &&
          ran != program.end() && crashed.count(ran->second) != 0) {
        out.push_back({array, e.node});
        break;
      }
    }
  }
  return out;
}

std::string convict_by_contrast(const std::string& path, const std::string& host, std::int64_t now_s,
                                std::chrono::seconds expiry) {
  if (path.empty() || !valid_node_name(host)) return "";
  std::vector<bad_node> recent;
  for (const bad_node& b : read_bad_nodes(path))
    if (now_s - b.when < expiry.count()) recent.push_back(b);
  for (const bad_node& b : recent)
    if (b.host == host && !is_suspicion(b)) return "";  // kept off already
  const auto clean = programs_clean_elsewhere(host, recent, [](const std::string& array) {
    std::string why;
    return read_run_events(run_events_path(array), &why);
  });
  if (clean.size() < kContrastPrograms) return "";
  bad_node b;
  b.when = now_s;
  b.host = host;
  b.job = "0";
  b.gpus = "-";
  b.reason = kByContrast;
  for (std::size_t i = 0; i < clean.size(); ++i)
    b.reason += (i == 0 ? "array " : ", array ") + clean[i].array + " ran cleanly on " + clean[i].clean_on;
  b.reason += ")";
  for (auto it = recent.rbegin(); it != recent.rend(); ++it)
    if (it->host == host && is_suspicion(*it)) {
      b.job = it->job;  // the newest crash that made the case
      break;
    }
  const std::string why = record_bad_node(path, b);
  if (!why.empty()) return "could not remember " + host + " as a bad node by contrast: " + why;
  return "remembered " + host + " as a bad node: " + b.reason;
}

}  // namespace trainctl
