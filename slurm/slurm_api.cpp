#include "slurm_api.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "env.hpp"
#include "env_names.hpp"
#include "parse.hpp"

namespace trainctl {
namespace {

void say(const std::string& line) {
  const std::string out = line + "\n";
  for (size_t done = 0; done < out.size();) {
    const ssize_t n = write(STDOUT_FILENO, out.data() + done, out.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

[[noreturn]] void fall_back(const std::string& job_id, const std::string& why) {
  say("trainctl-job-fallback " + why);
  execlp("scontrol", "scontrol", "show", "job", "-o", job_id.c_str(), static_cast<char*>(nullptr));
  say("trainctl-job-error cannot run scontrol: " + std::string(std::strerror(errno)));
  _exit(127);
}

// slurm_load_job takes the job as a slurm_step_id_t (by value) from 26.05, as a job id
// before: the call through dlsym must use the signature of the headers built against.
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
using load_job_fn = int (*)(job_info_msg_t**, slurm_step_id_t, uint16_t);
int call_load_job(load_job_fn load_job, job_info_msg_t** msg, std::uint32_t id) {
  slurm_step_id_t step{};
  step.sluid = 0;
  step.job_id = id;
  step.step_het_comp = NO_VAL;
  step.step_id = NO_VAL;
  return load_job(msg, step, SHOW_LOCAL);
}
#else
using load_job_fn = int (*)(job_info_msg_t**, std::uint32_t, uint16_t);
int call_load_job(load_job_fn load_job, job_info_msg_t** msg, std::uint32_t id) {
  return load_job(msg, id, SHOW_LOCAL);
}
#endif

}  // namespace

void slurm_api_job_child(const std::string& job_id) {
  if (env_set(env_var::kTrainctlNoLibslurm)) fall_back(job_id, "TRAINCTL_NO_LIBSLURM is set");
  // Global: the plugins libslurm loads in turn (auth/munge, hash) take its symbols from
  // the global scope. Its soname is the one of the headers built against (job_info_t).
  // A wheel's tools, built against one release's headers, meet whatever SLURM the cluster
  // runs: its records are read only through a libslurm of that same release.
  char built_for[16];
  std::snprintf(built_for, sizeof built_for, "%d.%02d", static_cast<int>(SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER)),
                static_cast<int>(SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER)));
  void* h = dlopen(TRAINCTL_LIBSLURM_SONAME, RTLD_NOW | RTLD_GLOBAL);
  if (h == nullptr)
    fall_back(job_id, std::string("this node has no ") + TRAINCTL_LIBSLURM_SONAME + " (SLURM " + built_for +
                          "'s library, whose job records this build reads)");
  // The soname is the API's number; a library renamed or linked by hand may still lie.
  auto api_version = reinterpret_cast<long (*)()>(dlsym(h, "slurm_api_version"));
  const long api = api_version != nullptr ? (api_version() >> 16) & 0xff : -1;
  if (api != TRAINCTL_LIBSLURM_API)
    fall_back(job_id, std::string(TRAINCTL_LIBSLURM_SONAME) + " here has API " + std::to_string(api) + ", not " +
                          std::to_string(TRAINCTL_LIBSLURM_API) + " (SLURM " + built_for +
                          "'s, whose job records this build reads)");
  auto init = reinterpret_cast<void (*)(const char*)>(dlsym(h, "slurm_init"));
  auto load_job = reinterpret_cast<load_job_fn>(dlsym(h, "slurm_load_job"));
  auto free_msg = reinterpret_cast<void (*)(job_info_msg_t*)>(dlsym(h, "slurm_free_job_info_msg"));
  auto state_string = reinterpret_cast<char* (*)(uint32_t)>(dlsym(h, "slurm_job_state_string"));
  auto error_string = reinterpret_cast<char* (*)(int)>(dlsym(h, "slurm_strerror"));
  if (load_job == nullptr || free_msg == nullptr || state_string == nullptr)
    fall_back(job_id, std::string(TRAINCTL_LIBSLURM_SONAME) + " lacks slurm_load_job");
  std::uint32_t id = 0;
  try {
    id = static_cast<std::uint32_t>(parse_int(job_id, 1, UINT32_MAX));
  } catch (const parse_error&) {
    say("trainctl-job-error '" + job_id + "' is not a job id");
    _exit(2);
  }
  if (init != nullptr) init(nullptr);  // reads slurm.conf ($SLURM_CONF); absent before 20.11
  job_info_msg_t* msg = nullptr;
  if (call_load_job(load_job, &msg, id) != 0 || msg == nullptr) {
    const int e = errno;
    say("trainctl-job-error slurm_load_job " + job_id + ": " +
        (error_string != nullptr ? error_string(e) : std::to_string(e)));
    _exit(1);
  }
  for (uint32_t i = 0; i < msg->record_count; ++i) {
    const slurm_job_info_t& j = msg->job_array[i];
    if (j.job_id != id) continue;  // an array's or a het job's other records
    // The base state, or COMPLETING: transient flags (SIGNALING while a preemption's
    // signals go out, CONFIGURING) do not end a running job.
    const char* state = (j.job_state & JOB_COMPLETING) != 0 ? "COMPLETING" : state_string(j.job_state & JOB_STATE_BASE);
    const long long limit =
        j.time_limit == INFINITE || j.time_limit == NO_VAL ? -1 : static_cast<long long>(j.time_limit) * 60;
    char line[256];
    std::snprintf(
        line, sizeof line, "trainctl-job end=%lld start=%lld limit=%lld preempt=%d requeue=%d submit=%lld state=%s",
        static_cast<long long>(j.end_time), static_cast<long long>(j.start_time), limit, j.preempt_time > 0 ? 1 : 0,
        j.requeue != 0 ? 1 : 0, static_cast<long long>(j.submit_time), state != nullptr ? state : "");
    say(line);
    _exit(0);
  }
  say("trainctl-job-error the controller has no record of job " + job_id);
  _exit(1);
}

std::optional<job_times> parse_api_output(const std::string& output, std::string* error, std::string* fallback_why) {
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.compare(0, 22, "trainctl-job-fallback ") == 0) {
      if (fallback_why != nullptr) *fallback_why = line.substr(22);
      continue;
    }
    if (line.compare(0, 19, "trainctl-job-error ") == 0) {
      if (error != nullptr) *error = line.substr(19);
      return std::nullopt;
    }
    if (line.compare(0, 13, "trainctl-job ") == 0) {
      job_times t;
      long long end = 0, start = 0, limit = -1, submit = 0;
      int preempt = 0, requeue = 0;
      char state[64] = {};
      if (std::sscanf(line.c_str(),
                      "trainctl-job end=%lld start=%lld limit=%lld preempt=%d requeue=%d submit=%lld state=%63s", &end,
                      &start, &limit, &preempt, &requeue, &submit, state) < 6) {
        if (error != nullptr) *error = "unreadable answer: " + line.substr(0, 120);
        return std::nullopt;
      }
      t.end_ms = end > 0 ? end * 1000 : 0;
      t.start_ms = start > 0 ? start * 1000 : 0;
      t.submit_ms = submit > 0 ? submit * 1000 : 0;
      t.limit_s = limit;
      t.preempting = preempt != 0;
      t.requeue = requeue != 0;
      t.state = state;
      return t;
    }
    auto jt = parse_scontrol_job(line);  // after a fallback: scontrol's line
    if (jt) return jt;
  }
  if (error != nullptr && error->empty()) *error = "no job record in the answer";
  return std::nullopt;
}

}  // namespace trainctl
