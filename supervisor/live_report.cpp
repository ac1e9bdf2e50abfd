#include "live_report.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "report_metrics.hpp"
#include "run_report.hpp"

namespace trainctl {

live_report::live_report(task_record task, std::string events_path)
    : task_(std::move(task)), path_(std::move(events_path)) {
  task_.state = "RUNNING";
  task_.end_ms = 0;
}

void live_report::started(std::int64_t start_ms) {
  if (start_ms > 0) task_.start_ms = start_ms;
}

void live_report::refresh() {
  struct stat st {};
  if (fstatat(AT_FDCWD, path_.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) problem_ = path_ + ": " + std::strerror(errno);
    return;  // not written yet: rank 0's first step writes it
  }
  const std::int64_t mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  if (st.st_ino == ino_ && st.st_size == size_ && mtime_ns == mtime_ns_) return;
  std::string why;
  std::vector<run_event> events = read_run_events(path_, &why);
  if (!why.empty()) {
    problem_ = why;
    return;
  }
  // This run's: a requeued job keeps its id, and its earlier runs' lines are not this task's.
  events_.clear();
  for (run_event& e : events)
    if (e.job == task_.job_id && e.ms >= task_.start_ms - kEventsBeforeStartMs) events_.push_back(std::move(e));
  ino_ = st.st_ino;
  size_ = st.st_size;
  mtime_ns_ = mtime_ns;
  problem_.clear();
}

std::vector<metric_family> live_report::metrics(std::int64_t now_ms,
                                                const std::vector<std::pair<std::string, std::string>>& labels) {
  if (task_.start_ms <= 0 || path_.empty()) return {};
  refresh();
  if (events_.empty()) return {};
  return running_task_metrics(build_run_report(task_.job_id, {task_}, events_, now_ms), labels);
}

std::string live_report::take_problem() {
  if (problem_ == said_) return "";
  said_ = problem_;
  return problem_;
}

}  // namespace trainctl
