#include "slurm_api.hpp"

#include <dlfcn.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <slurm/slurm.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace trainctl {
namespace {

// The entry points trainctl uses, resolved from the libslurm whose headers it was built
// with (TRAINCTL_LIBSLURM_SONAME: the structures must match).
struct api {
  void (*init)(const char*) = nullptr;  // absent before 20.11
  int (*load_job)(job_info_msg_t**, uint32_t, uint16_t) = nullptr;
  void (*free_msg)(job_info_msg_t*) = nullptr;
  char* (*state_string)(uint32_t) = nullptr;
  char* (*strerror)(int) = nullptr;
  std::string why;  // empty when loaded
};

const api& the_api() {
  static api a;
  static std::once_flag once;
  std::call_once(once, [] {
    // Global: the plugins libslurm loads in turn (auth/munge, hash) take its symbols
    // from the global scope, and a lazy lookup that fails there ends the process.
    void* h = dlopen(TRAINCTL_LIBSLURM_SONAME, RTLD_NOW | RTLD_GLOBAL);
    if (h == nullptr) {
      const char* e = dlerror();
      a.why = std::string("cannot load ") + TRAINCTL_LIBSLURM_SONAME + " (" + (e != nullptr ? e : "?") + ")";
      return;
    }
    a.init = reinterpret_cast<void (*)(const char*)>(dlsym(h, "slurm_init"));
    a.load_job = reinterpret_cast<int (*)(job_info_msg_t**, uint32_t, uint16_t)>(dlsym(h, "slurm_load_job"));
    a.free_msg = reinterpret_cast<void (*)(job_info_msg_t*)>(dlsym(h, "slurm_free_job_info_msg"));
    a.state_string = reinterpret_cast<char* (*)(uint32_t)>(dlsym(h, "slurm_job_state_string"));
    a.strerror = reinterpret_cast<char* (*)(int)>(dlsym(h, "slurm_strerror"));
    if (a.load_job == nullptr || a.free_msg == nullptr || a.state_string == nullptr) {
      a.why = std::string(TRAINCTL_LIBSLURM_SONAME) + " lacks slurm_load_job";
      a.load_job = nullptr;
      return;
    }
    if (a.init != nullptr) a.init(nullptr);  // reads slurm.conf ($SLURM_CONF) once
  });
  return a;
}

}  // namespace

bool slurm_api_ready(std::string* why) {
  const api& a = the_api();
  if (why != nullptr) *why = a.why;
  return a.load_job != nullptr;
}

std::optional<job_times> slurm_api_load_job(const std::string& job_id, std::string* error) {
  const api& a = the_api();
  if (a.load_job == nullptr) {
    if (error != nullptr) *error = a.why;
    return std::nullopt;
  }
  char* end = nullptr;
  const unsigned long id = std::strtoul(job_id.c_str(), &end, 10);
  if (end == job_id.c_str() || *end != '\0' || id == 0 || id > UINT32_MAX) {
    if (error != nullptr) *error = "'" + job_id + "' is not a job id";
    return std::nullopt;
  }
  job_info_msg_t* msg = nullptr;
  if (a.load_job(&msg, static_cast<uint32_t>(id), SHOW_LOCAL) != 0 || msg == nullptr) {
    const int e = errno;
    if (error != nullptr)
      *error = "slurm_load_job " + job_id + ": " + (a.strerror != nullptr ? a.strerror(e) : std::to_string(e));
    if (msg != nullptr) a.free_msg(msg);
    return std::nullopt;
  }
  std::optional<job_times> out;
  for (uint32_t i = 0; i < msg->record_count; ++i) {
    const slurm_job_info_t& j = msg->job_array[i];
    if (j.job_id != id) continue;  // an array's or a het job's other records
    job_times t;
    t.end_ms = j.end_time > 0 ? static_cast<std::int64_t>(j.end_time) * 1000 : 0;
    t.start_ms = j.start_time > 0 ? static_cast<std::int64_t>(j.start_time) * 1000 : 0;
    t.limit_s = j.time_limit == INFINITE || j.time_limit == NO_VAL ? -1 : static_cast<std::int64_t>(j.time_limit) * 60;
    t.preempting = j.preempt_time > 0;
    t.requeue = j.requeue != 0;
    // The base state, or COMPLETING: transient flags (SIGNALING while a preemption's
    // signals go out, CONFIGURING) do not end a running job.
    const char* state =
        (j.job_state & JOB_COMPLETING) != 0 ? "COMPLETING" : a.state_string(j.job_state & JOB_STATE_BASE);
    t.state = state != nullptr ? state : "";
    out = t;
    break;
  }
  a.free_msg(msg);
  if (!out && error != nullptr) *error = "the controller has no record of job " + job_id;
  return out;
}

struct slurm_job_reader::shared {
  std::mutex m;
  int efd = -1;
  bool busy = false;         // a thread is out
  std::uint64_t wanted = 0;  // the query whose answer is awaited (0: none)
  std::uint64_t serial = 0;
  bool have = false;  // an answer to `wanted` is in
  std::optional<job_times> answer;
  std::string error;
  ~shared() {
    if (efd >= 0) close(efd);
  }
};

slurm_job_reader::slurm_job_reader() : s_(std::make_shared<shared>()) {
  s_->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

// A thread still out keeps the shared part alive and is ended with the process.
slurm_job_reader::~slurm_job_reader() = default;

int slurm_job_reader::fd() const { return s_->efd; }

bool slurm_job_reader::start(const std::string& job_id, std::string* error) {
  std::uint64_t me = 0;
  {
    std::lock_guard<std::mutex> lock(s_->m);
    if (s_->busy) {
      if (error != nullptr) *error = "the previous query to the controller has not returned yet";
      return false;
    }
    s_->busy = true;
    s_->have = false;
    me = s_->wanted = ++s_->serial;
  }
  // The thread inherits the supervisor's blocked signals: they all stay on its signalfd.
  std::thread([s = s_, job_id, me] {
    std::string err;
    auto jt = slurm_api_load_job(job_id, &err);
    std::lock_guard<std::mutex> lock(s->m);
    s->busy = false;
    if (s->wanted != me) return;  // abandoned
    s->have = true;
    s->answer = std::move(jt);
    s->error = std::move(err);
    const std::uint64_t one = 1;
    (void)!write(s->efd, &one, sizeof one);
  }).detach();
  return true;
}

std::optional<std::optional<job_times>> slurm_job_reader::take(std::string* error) {
  std::uint64_t n = 0;
  (void)!read(s_->efd, &n, sizeof n);
  std::lock_guard<std::mutex> lock(s_->m);
  if (!s_->have) return std::nullopt;
  s_->have = false;
  s_->wanted = 0;
  if (error != nullptr) *error = s_->error;
  return s_->answer;
}

void slurm_job_reader::abandon() {
  std::lock_guard<std::mutex> lock(s_->m);
  s_->wanted = 0;
  s_->have = false;
}

}  // namespace trainctl
