// Rank 0's lines for `trainctl report` (run_events.hpp: first step, saves, notices, the
// exit, step times, the end) and the stragglers found where no supervisor records them:
// queued by the rank's thread, written by the watcher thread, so that a slow or stalled
// home never holds up a step.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "run_events.hpp"
#include "straggler_record.hpp"

namespace trainctl {

class run_log {
 public:
  // `wake`: tells the watcher thread there is something to write.
  explicit run_log(std::function<void()> wake) : wake_(std::move(wake)) {}

  // Where the events go (this user's run events for job `job`); none until then.
  void write_to(const std::string& path, const std::string& job);
  bool on() const { return !path_.empty(); }
  const std::string& job() const { return job_; }

  // Queues one event (any thread).
  void note(const char* what, std::int64_t step, std::int64_t took_ms, const std::string& reason);
  void note(const run_event& e);
  // Each kind of notice in `flags` once: a mark on the report's timeline.
  void note_notices(std::uint32_t flags);
  // A straggler finding for the watcher to record in slow_nodes (no supervisor here).
  void queue_straggler(const straggler_finding& f);

  // The watcher: writes what was queued; the findings go to `straggler_dir`. A failure
  // to write is said once per distinct reason.
  void flush(const std::string& straggler_dir);
  // The last lines and findings, from a thread waited for at most 2 s: a stalled home or
  // log directory must not keep a rank that is done from ending (what was not written
  // is lost then, and the report says less).
  void flush_at_end(const std::string& straggler_dir);

 private:
  std::string take_lines();
  std::vector<straggler_finding> take_findings();

  std::function<void()> wake_;
  std::string path_, job_;
  std::mutex mu_;  // guards lines_ and findings_
  std::string lines_;
  std::vector<straggler_finding> findings_;
  std::string problem_;  // the last write's failure, said once (watcher only)
  std::atomic<std::uint32_t> noticed_{0};
};

}  // namespace trainctl
