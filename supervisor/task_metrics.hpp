// --metrics-dir: the task's live figures as a Prometheus textfile that node_exporter's
// textfile collector serves, one file per job step and node (trainctl_<job>_<step>_<node>.prom),
// kept by the supervisor that publishes the node state (one per node, whatever the
// tasks), rewritten by rename (a scrape never reads half a file) at most once per
// interval, and removed as the task ends. What the supervisor reads from its node state, nothing
// more: each rank's step, step time and last check(), the last save every rank of the
// node committed, the deadline and the job's end, the straggler findings; on the job's
// first node also the run's goodput and node-seconds by cause, as the report computes
// them (live_report.hpp). The interruptions of a finished job or array are
// `trainctl report --format=prometheus`'s.
//
// The directory is the site's (node_exporter reads it as root or its own user): it must
// be a real directory owned by root or by this user, writable by no other user, except
// as a group with the sticky bit set, where nobody but a file's owner may replace or
// remove it. Anything else is refused with one line; training never waits on it.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "live_report.hpp"
#include "node_state.hpp"
#include "owned_fd.hpp"

namespace trainctl {

// Why a directory of that status may not take this user's metrics ("" when it may).
std::string metrics_dir_problem(const struct stat& st, uid_t me);

// What names a task's samples: its job, array task, user, run id and node.
struct metrics_identity {
  std::string job, array_task, user, run_id, node;
  std::string step = "0";  // for the file's name
  std::vector<std::pair<std::string, std::string>> labels() const;
  std::string file_name() const;  // trainctl_<job>_<step>_<node>.prom, safe characters only
};

// The node state's figures, as the file holds them (Prometheus text 0.0.4); "" while no
// rank has called check() (a batch script's own step that only starts job steps).
std::string task_metrics_text(const node_state& ns, const metrics_identity& id);

class task_metrics {
 public:
  // nullptr, and what is wrong with `dir` in `why` ("is a symbolic link"), when it is
  // refused or cannot be opened.
  static std::unique_ptr<task_metrics> open(const std::string& dir, std::chrono::milliseconds every,
                                            metrics_identity id, std::string* why);
  ~task_metrics();  // removes the file
  task_metrics(const task_metrics&) = delete;
  task_metrics& operator=(const task_metrics&) = delete;

  // The job's goodput in this file too (the job's first node's: live_report.hpp).
  void add_goodput(std::unique_ptr<live_report> goodput) { goodput_ = std::move(goodput); }
  live_report* goodput() { return goodput_.get(); }

  // Writes the file when `every` has passed since the last write (or `force`): the node
  // state's figures, then the goodput's. A failure is said once ("PATH: why" returned,
  // "" otherwise) and tried again an interval later.
  std::string update(const node_state& ns, std::int64_t now_ms, bool force = false);

 private:
  task_metrics(owned_fd dir, std::string shown, std::chrono::milliseconds every, metrics_identity id);
  owned_fd dir_;  // opened once: a path swapped later is not followed
  std::string shown_;
  std::chrono::milliseconds every_;
  metrics_identity id_;
  std::unique_ptr<live_report> goodput_;
  std::int64_t written_ms_ = 0;  // the last try
  ino_t wrote_ = 0;              // the inode of the file last written: this process's to remove
  bool failing_ = false;
};

}  // namespace trainctl
