// A hang's dump: every rank's stacks on this node into LOG_DIR's stacks directory, the
// wait (bounded) for the whole job's files, the first node's job-wide line and the nodes
// that hold the odd ranks. It runs in a child (the log directory may be the very mount
// the ranks hang on), and its report comes back as a hang_dump_report, encoded and
// decoded in one place. The hang itself (found when, how long stalled) is kept here too.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "crash_culprit.hpp"
#include "subprocess.hpp"

namespace trainctl {

// What the child needs, copied: it runs with the supervisor's memory as it was.
struct hang_dump_request {
  std::string why;    // what was found: "rank 3 (pid 812) has not reached an agreement for ..."
  std::string doing;  // what the ranks were doing ("saving", "in phase eval"); "" training
  std::int64_t stall_began_ms = 0;
  std::int64_t stall_ms = 0;
  log_dir_status dir;
  std::string leaf;       // stacks-<job>
  std::string run;        // run_key
  std::string state_dir;  // where the ranks' Python stack files are
  std::string job;
  pid_t root = 0;  // the supervisor: its ranks are below it
  std::vector<std::string> launchers;
  bool command_is_rank = true;
  std::function<bool(pid_t)> excluded;  // the supervisor's own helpers
};

struct hang_dump_report {
  std::vector<std::string> lines;  // for the supervisor's log
  std::string summary;             // where the job is stuck, for --on-notice and the action
};

// The child's work (also callable directly, as the unit tests do).
hang_dump_report take_hang_stacks(const hang_dump_request& r);

class hang_dump {
 public:
  // A hang was found: starts the dump. "" when it started, else why not.
  std::string start(const hang_dump_request& r, const std::vector<int>& ignore_signals);
  bool running() const { return child_ != nullptr; }
  pid_t pid() const { return child_ ? child_->pid() : 0; }
  // A status the loop reaped: the report when it was the dump's.
  std::optional<hang_dump_report> reaped(pid_t pid, int status);
  // Past kLimit: ends it; true then.
  bool overdue();
  void abandon();
  void drain();

  bool hung() const { return hung_; }
  std::int64_t hung_since_ms() const { return hung_since_ms_; }
  void progress_again() { hung_ = false; }
  // How long the ranks had been quiet when the hang was found.
  std::int64_t stall_ms() const { return stall_ms_; }
  void set_stall_ms(std::int64_t ms) { stall_ms_ = ms; }

  // A dump (stacks, the wait for the other nodes) that takes longer is ended.
  static constexpr std::chrono::milliseconds kLimit{120000};

 private:
  std::unique_ptr<started_child> child_;
  std::chrono::steady_clock::time_point by_{};
  bool hung_ = false;
  std::int64_t hung_since_ms_ = 0;  // when the hang was found: only later beats end it
  std::int64_t stall_ms_ = 0;
};

}  // namespace trainctl
