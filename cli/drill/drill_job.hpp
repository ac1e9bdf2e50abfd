// What trainctl drill does to its array and watches in it, on a login node as the user:
// the array itself (cancelled however the drill ends), rank 0's run events, the job's
// record, the save switch touched, a rank stopped or killed through srun --overlap, and
// the hang summary its supervisors wrote.
#pragma once

#include <chrono>
#include <csignal>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "run_events.hpp"
#include "slurm_job.hpp"

namespace trainctl::commands {

// Set by SIGINT, SIGTERM or SIGHUP while a drill runs: every wait ends, the array is cancelled.
extern volatile std::sig_atomic_t g_drill_interrupted;
void catch_drill_interrupts();

std::int64_t unix_ms_now();

// The drill's array: cancelled whatever way the drill ends (RAII), so that no rehearsal
// outlives it holding nodes.
class drill_job {
 public:
  explicit drill_job(std::string id) : id_(std::move(id)) {}
  drill_job(const drill_job&) = delete;
  drill_job& operator=(const drill_job&) = delete;
  ~drill_job();
  const std::string& id() const { return id_; }

 private:
  std::string id_;
};

// Rank 0's run events of the drill's array, re-read at each look.
class event_watch {
 public:
  // The events of `array` written at or after `since_ms` (unix ms): an older array of the
  // same id (the cluster's ids started again) wrote into the same file before.
  event_watch(const std::string& array, std::int64_t since_ms) : path_(run_events_path(array)), since_ms_(since_ms) {}
  const std::vector<run_event>& read();
  // The first event `what` (of job `job` when given, at or after `since`, with `reason`
  // when given), or nullptr.
  const run_event* find(const std::string& what, const std::string& job = "", std::int64_t since = 0,
                        const std::string& reason = "") const;
  // The first event `what` of the same job after `after` in file order, or nullptr.
  const run_event* after(const run_event& after, const std::string& what) const;

 private:
  std::string path_;
  std::int64_t since_ms_;
  std::vector<run_event> events_;
};

// The job ids of the drill array's tasks: the array's own and each task's that wrote into
// its events file since the drill began (an older array of the same id, after the
// cluster's ids started again, wrote before). Each task has its own id (an array 512's
// tasks may be 512, 513, ...): what the drill forgets is exactly these jobs' findings,
// never another job's whose id merely starts the same (5120).
std::set<std::string> drill_task_jobs(const std::string& array, const std::vector<run_event>& events,
                                      std::int64_t since_ms);

// Polls `done` every half second until it says yes (true), `limit` passes or the drill
// is interrupted (false).
bool wait_until(std::chrono::milliseconds limit, const std::function<bool()>& done);

// The job's times and state from slurmctld, nullopt when it has none.
std::optional<job_times> job_record_of(const std::string& job);

// Touches `path` as touch(1) does, never through a link or onto a FIFO: "" or why not.
std::string touch_switch(const std::string& path);

// Sends `sig` (STOP, CONT, KILL) to rank `rank` of running job `job` on whichever node has
// it: the helper's line ("signalled rank=R pid=P host=H log_dir=D"), "" when none had it.
std::string signal_rank(const std::string& job, int rank, const char* sig);

// KEY's value in such a line ("" when absent).
std::string line_field(const std::string& line, const std::string& key);

// The newest job-wide line of the hang summary of job `job` under `log_dir`, without its
// time ("" none).
std::string hang_summary(const std::string& log_dir, const std::string& job);

}  // namespace trainctl::commands
