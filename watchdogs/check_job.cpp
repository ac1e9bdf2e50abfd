#include <unistd.h>

#include <cstdlib>
#include <sstream>

#include "checks.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "subprocess.hpp"

namespace trainctl {

std::vector<job_row> parse_squeue(const std::string& text) {
  std::vector<job_row> rows;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    job_row r;
    size_t a = line.find('|'), b = a == std::string::npos ? a : line.find('|', a + 1),
           c = b == std::string::npos ? b : line.find('|', b + 1);
    if (c == std::string::npos) continue;
    r.id = line.substr(0, a);
    r.state = line.substr(a + 1, b - a - 1);
    r.reason = line.substr(b + 1, c - b - 1);
    r.name = line.substr(c + 1);
    if (r.id.empty() || r.state.empty()) continue;
    rows.push_back(r);
  }
  return rows;
}

std::string explain_pending(const std::string& reason) {
  if (reason.rfind("Dependency", 0) == 0) return "waiting for a dependency";
  if (reason == "DependencyNeverSatisfied") return "its dependency can never be satisfied";
  if (reason.find("ArrayTaskLimit") != std::string::npos) return "held by the array's task limit (%N)";
  if (reason == "Priority") return "waiting for higher-priority jobs";
  if (reason == "Resources") return "waiting for resources";
  if (reason == "BeginTime") return "waiting for its begin time";
  if (reason.rfind("QOS", 0) == 0 || reason.rfind("Assoc", 0) == 0) return "held by a limit (" + reason + ")";
  if (reason == "JobHeldUser" || reason == "JobHeldAdmin") return "held (" + reason + ")";
  return reason;
}

std::string last_ended_clause(const std::string& sacct_output) {
  std::istringstream in(sacct_output);
  std::string line, id, state, code, end, best_end;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string i, st, c, e;
    if (!std::getline(f, i, '|') || !std::getline(f, st, '|') || !std::getline(f, c, '|') || !std::getline(f, e, '|'))
      continue;
    if (i.empty() || e.empty() || e == "Unknown" || e <= best_end) continue;  // ISO times compare as text
    id = i, state = st.substr(0, st.find(' ')), code = c, best_end = e;
  }
  if (id.empty()) return "";
  const std::string status = code.substr(0, code.find(':'));
  std::string clause = "; the last one, " + id + ", ended " + state + " at " + best_end;
  if (status != "0" && !status.empty()) clause += " with exit status " + status;
  if (status == "93")
    clause +=
        ": trainctl's no-progress breaker stopped it (its last runs crashed before getting past the step "
        "they resumed at; trainctl report " +
        id.substr(0, id.find('_')) + ")";
  return clause;
}

// The newest ended job of `name` in the last week, from sacct ("" where accounting is
// off, or sacct cannot tell within `timeout`).
std::string last_ended(const std::string& name, const std::string& user, std::chrono::milliseconds timeout) {
  if (name.find(',') != std::string::npos) return "";  // sacct --name takes a list
  child_spec spec;
  spec.argv = {
      "sacct", "-X", "-n", "-P", "-u", user, "--name=" + name, "-S", "now-7days", "-o", "JobID,State,ExitCode,End"};
  spec.deadline = timeout;
  const child_result r = run_child(spec);
  return r.ok() ? last_ended_clause(r.output) : "";
}

std::vector<check_result> check_job_running(const std::vector<std::string>& names, const std::string& user,
                                            std::chrono::milliseconds timeout) {
  std::vector<check_result> out;
  // One controller query for every name; the name last, so '|' in a name is safe.
  child_spec spec;
  spec.argv = {"squeue", "-h",         "-u", user, "-t", "PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED",
               "-o",     "%i|%T|%r|%j"};
  spec.deadline = timeout;
  const child_result squeue = run_child(spec);
  const bool ok = squeue.ok();
  const std::string& text = squeue.output;
  const std::string& error = squeue.error;
  // Never count the job this check runs in (a cron job named like the training job
  // would otherwise always find itself).
  const std::string self = env_text(env_var::kSlurmJobId);
  std::string self_array;
  if (env_set(env_var::kSlurmArrayJobId) && env_set(env_var::kSlurmArrayTaskId))
    self_array = env_text(env_var::kSlurmArrayJobId) + "_" + env_text(env_var::kSlurmArrayTaskId);
  const auto rows = ok ? parse_squeue(text) : std::vector<job_row>{};
  for (const auto& name : names) {
    check_result r;
    r.check = "job-running";
    r.target = name;
    r.labels = {{"job", name}};
    if (!ok) {
      r.status = kUnknown;
      r.text = "cannot ask the controller: " + error;
      out.push_back(r);
      continue;
    }
    int running = 0, pending = 0;
    std::string why, ids;
    for (const auto& row : rows) {
      if (row.name != name || row.id == self || row.id == self_array) continue;
      ids += (ids.empty() ? "" : ",") + row.id;
      if (row.state == "PENDING") {
        ++pending;
        if (why.empty()) why = explain_pending(row.reason);
      } else {
        ++running;
      }
    }
    if (running > 0) {
      r.status = kOk;
      r.text = "'" + name + "' is running (job " + ids + ")";
    } else if (pending > 0) {
      r.status = kOk;
      r.text = "'" + name + "' is pending (job " + ids + "): " + why;
    } else {
      r.status = kCritical;
      r.text = "no job named '" + name + "' is running or pending for user " + user + last_ended(name, user, timeout);
    }
    r.figures.emplace_back("running", running);
    r.figures.emplace_back("pending", pending);
    out.push_back(r);
  }
  return out;
}

}  // namespace trainctl
