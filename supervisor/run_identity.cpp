#include "run_identity.hpp"

#include "env.hpp"
#include "env_names.hpp"
#include "node_state.hpp"
#include "parse.hpp"
#include "run_event_kinds.hpp"
#include "run_events.hpp"
#include "run_id.hpp"
#include "slurm_job.hpp"
#include "subprocess.hpp"

namespace trainctl {
namespace {

std::int64_t env_count(const char* name, std::int64_t unset) {
  const std::string v = env_text(name);
  return v.empty() ? unset : all_digits(v, 9) ? std::stoll(v) : -1;
}

// The child's work: the id on the first line, why it has no time on the second.
std::string decide_here(const std::string& job_id, std::chrono::milliseconds query_deadline) {
  std::string error;
  const auto jt = query_job(job_id, query_deadline, &error);
  const std::int64_t restart = env_count(env_var::kSlurmRestartCount, 0);
  std::vector<run_event> events;
  std::string problem;
  if (jt && restart > 0) events = read_run_events(own_run_events_path(), &problem);
  const std::int64_t since = jt ? array_since(jt->submit_ms, restart, events) : 0;
  const std::string id = run_id(env_text, since);
  if (!jt) return id + "\nthe controller did not say when the job was submitted (" + error + ")";
  if (!problem.empty()) return id + "\n" + problem;
  if (since == 0) return id + "\nno earlier run of this requeued job wrote when its array was submitted";
  run_event e = make_run_event(run_event_kind::kTaskStart, job_id, unix_now_ms());
  e.task = env_count(env_var::kSlurmArrayTaskId, -1);
  e.restart = restart;
  e.figures = {{"since", since}};
  problem = append_run_events(own_run_events_path(), format_run_event(e));
  return problem.empty() ? id + "\n" : id + "\ncannot note the array's submit time for its requeues: " + problem;
}

}  // namespace

std::string decide_run_id(const std::string& job_id, std::chrono::milliseconds deadline, std::string* why) {
  std::string own = run_id(env_text);
  if (valid_run_id(env_text(kRunIdVar)) || job_id.empty()) return own;
  child_spec spec;
  spec.deadline = deadline;
  const std::chrono::milliseconds query_deadline = deadline * 3 / 4;
  spec.work = [job_id, query_deadline] { return decide_here(job_id, query_deadline); };
  const child_result r = run_child(spec);
  const std::size_t nl = r.output.find('\n');
  std::string id = r.output.substr(0, nl);
  if (!r.ok() || nl == std::string::npos || !valid_run_id(id)) {
    *why = "could not decide the run id in time (" + (r.ok() ? std::string("no answer") : r.error) + ")";
    return own;
  }
  std::string said = r.output.substr(nl + 1);
  if (!said.empty() && said.back() == '\n') said.pop_back();
  *why = said;
  return id;
}

}  // namespace trainctl
