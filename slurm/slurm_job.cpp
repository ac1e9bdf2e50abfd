#include "slurm_job.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>
#include <utility>
#include <vector>

#include "parse.hpp"
#include "slurm_api.hpp"
#include "subprocess.hpp"
#include "time_text.hpp"

namespace trainctl {

std::optional<std::string> scontrol_show(const std::string& kind, const std::string& id,
                                         std::chrono::milliseconds timeout, std::string* error) {
  child_spec spec;
  spec.argv = {"scontrol", "show", kind, "-o", id};
  spec.deadline = timeout;
  child_result r = run_child(spec);
  if (!r.ok()) {
    if (error != nullptr) *error = r.error;
    return std::nullopt;
  }
  return std::move(r.output);
}

bool is_job_id(const std::string& text) {
  const size_t us = text.find('_');
  return us == std::string::npos ? all_digits(text, 12)
                                 : all_digits(text.substr(0, us), 12) && all_digits(text.substr(us + 1), 12);
}

job_record parse_job_record(const std::string& line) {
  job_record j;
  j.id = scontrol_field(line, "JobId");
  j.name = scontrol_field(line, "JobName");
  j.state = scontrol_field(line, "JobState");
  const std::string user = scontrol_field(line, "UserId");
  const size_t paren = user.find('(');
  j.user = user.substr(0, paren);
  if (paren != std::string::npos) j.uid = std::strtol(user.c_str() + paren + 1, nullptr, 10);
  j.partition = scontrol_field(line, "Partition");
  j.node_list = scontrol_field(line, "NodeList");
  j.num_nodes = scontrol_field(line, "NumNodes");
  j.work_dir = scontrol_field(line, "WorkDir");
  j.reason = scontrol_field(line, "Reason");
  try {
    j.end_ms = parse_slurm_timestamp(scontrol_field(line, "EndTime"));
  } catch (const std::exception&) {
    j.end_ms = 0;  // shown without the time limit rather than not at all
  }
  return j;
}

std::optional<job_record> show_job_record(const std::string& id, std::chrono::milliseconds timeout,
                                          std::string* error) {
  const auto line = scontrol_show("job", id, timeout, error);
  if (!line) return std::nullopt;
  return parse_job_record(*line);
}

namespace {

child_spec api_query_spec(const std::string& job_id, std::chrono::milliseconds timeout) {
  child_spec spec;
  spec.work = [job_id]() -> std::string {
    slurm_api_job_child(job_id);  // never returns
    return "";
  };
  spec.deadline = timeout;
  return spec;
}

child_spec job_query_spec(const std::string& job_id, std::chrono::milliseconds timeout) {
  child_spec spec;
  spec.argv = {"scontrol", "show", "job", "-o", job_id};
  spec.deadline = timeout;
  return spec;
}

std::optional<job_times> job_from(const std::string& job_id, const child_result& r, std::string* error) {
  if (!r.ok()) {
    if (error != nullptr) *error = r.error;
    return std::nullopt;
  }
  auto jt = parse_scontrol_job(r.output.substr(0, r.output.find('\n')));
  if (!jt && error != nullptr) *error = "scontrol show job " + job_id + " printed no job record";
  return jt;
}

}  // namespace

std::optional<job_times> query_job(const std::string& job_id, std::chrono::milliseconds timeout, std::string* error) {
  const child_result r = run_child(api_query_spec(job_id, timeout));
  std::string err;
  auto jt = parse_api_output(r.output, &err, nullptr);
  if (!jt && error != nullptr) *error = !err.empty() ? err : r.error;
  return jt;
}

job_query::job_query() = default;
job_query::~job_query() = default;

bool job_query::start(const std::string& job_id, std::chrono::milliseconds timeout, const std::vector<int>& ignore,
                      std::string* error) {
  if (child_) return true;
  child_spec spec = use_api_ ? api_query_spec(job_id, timeout) : job_query_spec(job_id, timeout);
  spec.ignore_signals = ignore;
  auto child = std::make_unique<started_child>(spec);
  if (!child->error().empty()) {
    if (error != nullptr) *error = child->error();
    return false;
  }
  child_ = std::move(child);
  job_id_ = job_id;
  deadline_ = std::chrono::steady_clock::now() + timeout;
  return true;
}

pid_t job_query::pid() const { return child_ ? child_->pid() : -1; }

std::string job_query::take_fallback_note() { return std::exchange(fallback_note_, ""); }

void job_query::drain() {
  if (child_) child_->drain();
}

std::optional<job_times> job_query::finish(int wait_status, std::string* error) {
  if (!child_) return std::nullopt;
  const child_result r = child_->finish(wait_status);
  child_.reset();
  if (!use_api_) return job_from(job_id_, r, error);
  std::string why;
  auto jt = parse_api_output(r.output, error, &why);
  if (!why.empty()) {  // no libslurm here: scontrol from now on
    use_api_ = false;
    fallback_note_ = why;
  }
  if (!jt && error != nullptr && error->empty()) *error = r.error.empty() ? "no answer" : r.error;
  return jt;
}

std::optional<job_times> job_query::expire(std::string* error) {
  if (!child_) return std::nullopt;
  const child_result r = child_->abandon();
  child_.reset();
  if (error != nullptr) *error = r.error;
  return std::nullopt;
}

namespace {

// A SLURM command that answers with its exit status only; *error says why it failed.
bool run_slurm_command(std::vector<std::string> argv, std::chrono::milliseconds timeout, std::string* error) {
  child_spec spec;
  spec.argv = std::move(argv);
  spec.deadline = timeout;
  const child_result r = run_child(spec);
  if (!r.ok() && error != nullptr) *error = r.error;
  return r.ok();
}

}  // namespace

bool requeue_job(const std::string& job_id, std::chrono::milliseconds timeout, std::string* error) {
  return run_slurm_command({"scontrol", "requeue", job_id}, timeout, error);
}

void pending_by_restarts(const std::string& squeue_output, const std::string& array_id,
                         std::vector<std::string>* never_ran, std::string* requeued) {
  for (const std::string_view line : split(squeue_output, '\n')) {
    std::istringstream fields{std::string(line)};
    std::string array, task, restarts;
    if (!(fields >> array >> task >> restarts) || array != array_id || !all_digits(task, 9) || !all_digits(restarts, 9))
      continue;
    if (restarts == "0")
      never_ran->push_back(array + "_" + task);
    else
      *requeued += (requeued->empty() ? "" : " ") + array + "_" + task;
  }
}

bool cancel_pending_tasks(const std::string& array_id, std::chrono::milliseconds timeout, std::string* error,
                          std::string* spared) {
  if (!is_job_id(array_id)) {
    if (error != nullptr) *error = "not a job id: '" + array_id + "'";
    return false;
  }
  child_spec spec;
  spec.argv = {
      "squeue", "-h", "-r", "-t", "PENDING", "-j", array_id, "-O", "ArrayJobID:24,ArrayTaskID:24,RestartCnt:12"};
  spec.deadline = timeout;
  const child_result r = run_child(spec);
  if (!r.ok()) {
    if (error != nullptr) *error = r.error;
    return false;
  }
  std::vector<std::string> never_ran;
  std::string requeued;
  pending_by_restarts(r.output, array_id, &never_ran, &requeued);
  if (spared != nullptr) *spared = requeued;
  if (requeued.empty()) return run_slurm_command({"scancel", "--state=PENDING", array_id}, timeout, error);
  if (never_ran.empty()) return true;
  std::vector<std::string> argv = {"scancel", "--state=PENDING"};
  argv.insert(argv.end(), never_ran.begin(), never_ran.end());
  return run_slurm_command(argv, timeout, error);
}

// What squeue prints for a job array's tasks, and scontrol takes: "4242_[2-5]", "4242_3",
// several comma-separated. Nothing else of squeue's output goes on a command line.
namespace {

bool valid_task_ids(const std::string& ids) {
  return !ids.empty() && ids.find_first_not_of("0123456789_[],-:") == std::string::npos;
}

}  // namespace

pending_array_tasks pending_tasks(const std::string& array_id, std::chrono::milliseconds timeout, std::string* error) {
  pending_array_tasks p;
  if (!is_job_id(array_id)) {
    if (error != nullptr) *error = "not a job id: '" + array_id + "'";
    return p;
  }
  // Each task on a line of its own (-r) to count them, then squeue's ranges to name them.
  child_spec spec;
  spec.argv = {"squeue", "-h", "-r", "-t", "PENDING", "-j", array_id, "-o", "%i"};
  spec.deadline = timeout;
  child_result r = run_child(spec);
  if (r.ok()) {
    spec.argv = {"squeue", "-h", "-t", "PENDING", "-j", array_id, "-o", "%i"};
    const child_result ranges = run_child(spec);
    if (!ranges.ok()) r = ranges;
    for (const std::string_view line : split(ranges.output, '\n')) {
      // "4242_[2-5%1]": the throttle is no part of the ids; only what an id can hold.
      std::string ids(line);
      const std::size_t throttle = ids.find('%');
      if (throttle != std::string::npos) ids = ids.substr(0, throttle) + "]";
      if (!valid_task_ids(ids)) continue;
      p.ids += (p.ids.empty() ? "" : ",") + ids;
    }
  }
  if (!r.ok()) {
    if (error != nullptr) *error = r.error;
    return p;
  }
  p.count = 0;
  for (char c : r.output) p.count += c == '\n';
  return p;
}

bool hold_pending_tasks(const std::string& ids, std::chrono::milliseconds timeout, std::string* error) {
  if (!valid_task_ids(ids)) {
    if (error != nullptr) *error = "not job ids: '" + ids + "'";
    return false;
  }
  return run_slurm_command({"scontrol", "hold", ids}, timeout, error);
}

}  // namespace trainctl
