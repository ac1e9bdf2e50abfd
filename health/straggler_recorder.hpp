// The straggler findings this node's ranks put in their heartbeat slots, written to
// LOG_DIR/slow_nodes and the bad-node memory by the supervisor: in a child (the log
// directory and the home may stall), one child at a time; a finding that comes while
// one is written waits for the next look. A straggler is rare: a handful a run.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "node_state.hpp"
#include "run_options.hpp"
#include "subprocess.hpp"

namespace trainctl {

class straggler_recorder {
 public:
  using log_fn = std::function<void(const std::string&)>;
  straggler_recorder(const supervisor_options& o, log_fn log) : opts_(o), log_(std::move(log)) {}

  // Takes the findings the ranks `mine` (this node's watched ranks) reported since the
  // last look, and writes them under `log_dir` ("" when it is unusable: the bad-node
  // memory only).
  void look(const node_state& ns, const std::function<bool(pid_t)>& mine, const std::string& log_dir);
  // A status the loop reaped: true when it was the writer's.
  bool reaped(pid_t pid, int status);
  // Ends a writer past its limit (said in the log).
  void tick();
  bool busy() const { return writer_ != nullptr; }
  pid_t writer_pid() const { return writer_ ? writer_->pid() : 0; }

  // Writing a straggler finding: one line in the log directory, one in the home.
  static constexpr std::chrono::milliseconds kLimit{10000};

 private:
  const supervisor_options& opts_;
  log_fn log_;
  std::unique_ptr<started_child> writer_;
  std::chrono::steady_clock::time_point writer_by_{};
  std::map<pid_t, std::int64_t> seen_;  // per rank: the findings its beat showed that were taken
};

}  // namespace trainctl
