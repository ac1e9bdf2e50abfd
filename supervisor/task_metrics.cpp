#include "task_metrics.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "beat_fields.hpp"
#include "deadline_fields.hpp"
#include "metrics_files.hpp"
#include "metrics_text.hpp"
#include "rank_views.hpp"

namespace trainctl {
namespace {

metric_sample sample(const std::vector<std::pair<std::string, std::string>>& labels, double v) {
  return metric_sample{labels, v};
}

}  // namespace

std::string metrics_dir_problem(const struct stat& st, uid_t me) {
  if (S_ISLNK(st.st_mode)) return "is a symbolic link";
  if (!S_ISDIR(st.st_mode)) return "is not a directory";
  if (st.st_uid != 0 && st.st_uid != me)
    return "belongs to uid " + std::to_string(st.st_uid) + ", neither root nor you";
  if ((st.st_mode & S_IWOTH) != 0) return "can be written by every user";
  if ((st.st_mode & S_IWGRP) != 0 && (st.st_mode & S_ISVTX) == 0)
    return "can be written by its group without the sticky bit (chmod +t): they could replace your file";
  return "";
}

std::vector<std::pair<std::string, std::string>> metrics_identity::labels() const {
  std::vector<std::pair<std::string, std::string>> l{{"slurm_job", job}};
  if (!array_task.empty()) l.emplace_back("array_task", array_task);
  // Several steps of a job on one node (a sweep packed into one allocation) each have a
  // rank 0: without the step their series would be the same, and node_exporter refuses that.
  l.emplace_back("slurm_step", step);
  l.emplace_back("user", user);
  if (!run_id.empty()) l.emplace_back("run_id", run_id);
  l.emplace_back("node", node);
  return l;
}

std::string metrics_identity::file_name() const { return metrics_file_name(job, step, node); }

std::string task_metrics_text(const node_state& ns, const metrics_identity& id) {
  using t = metric_type;
  const auto base = id.labels();
  auto with_rank = [&](std::int32_t rank) {
    auto l = base;
    l.emplace_back("rank", std::to_string(rank));
    return l;
  };
  metric_family step{"trainctl_rank_step", t::gauge, "The last step each rank's check() saw.", {}};
  metric_family step_s{"trainctl_rank_step_seconds",
                       t::gauge,
                       "A rank's work per step outside check(), over its last agreement window.",
                       {}};
  metric_family beat{
      "trainctl_rank_last_check_timestamp_seconds", t::gauge, "When each rank last called check() (Unix time).", {}};
  metric_family slow{"trainctl_rank_straggler_findings_total",
                     t::counter,
                     "Straggler findings against each rank: agreement windows in a row where it was the slowest.",
                     {}};
  const std::vector<rank_view> ranks = newest_rank_views(ns);
  if (ranks.empty()) return "";
  std::int64_t committed = -1, committed_ms = 0;
  bool every_rank_committed = !ranks.empty();
  for (const rank_view& p : ranks) {
    step.samples.push_back(sample(with_rank(p.rank), static_cast<double>(p.step)));
    if (p.step_us > 0) step_s.samples.push_back(sample(with_rank(p.rank), static_cast<double>(p.step_us) / 1e6));
    beat.samples.push_back(sample(with_rank(p.rank), static_cast<double>(p.beat_ms) / 1000.0));
    slow.samples.push_back(sample(with_rank(p.rank), static_cast<double>(p.straggler_reports)));
    if (p.committed_step < 0) every_rank_committed = false;
    // The step every rank of the node committed: the lowest of their last commits, and
    // when the last of the ranks at it committed.
    if (committed < 0 || p.committed_step < committed) {
      committed = p.committed_step;
      committed_ms = p.committed_ms;
    } else if (p.committed_step == committed) {
      committed_ms = std::max(committed_ms, p.committed_ms);
    }
  }
  std::vector<metric_family> families;
  // A node-wide gauge, left out while its value is not known (`known` false).
  const auto gauge = [&](const char* name, const char* help, double value, bool known) {
    if (known) families.push_back({name, t::gauge, help, {sample(base, value)}});
  };
  gauge("trainctl_ranks", "Rank processes of the task that called check() on this node.",
        static_cast<double>(ranks.size()), true);
  families.insert(families.end(), {step, step_s, beat, slow});
  gauge("trainctl_last_committed_step", "The last save every rank of the node committed (ctl.saved), in this run.",
        static_cast<double>(committed), every_rank_committed);
  gauge("trainctl_last_commit_timestamp_seconds", "When the last rank of the node committed that save (Unix time).",
        static_cast<double>(committed_ms) / 1000.0, every_rank_committed);
  const std::int64_t longest = beat_fields::longest_save_ms(ns);
  gauge("trainctl_longest_save_seconds", "The longest save of a rank on this node, from the decision to save.",
        static_cast<double>(longest) / 1000.0, longest > 0);
  const std::int64_t deadline = deadline_fields::deadline_ms(ns);
  gauge("trainctl_deadline_timestamp_seconds",
        "When the ranks are told to save and exit before the job's end (Unix time).",
        static_cast<double>(deadline) / 1000.0, deadline > 0);
  const std::int64_t end = deadline_fields::end_time(ns).end_ms;
  gauge("trainctl_job_end_timestamp_seconds", "The job's EndTime as the controller last said it (Unix time).",
        static_cast<double>(end) / 1000.0, end > 0);
  return metrics_text(families, metrics_format::prometheus);
}

std::unique_ptr<task_metrics> task_metrics::open(const std::string& dir, std::chrono::milliseconds every,
                                                 metrics_identity id, std::string* why) {
  owned_fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!fd) {
    *why =
        errno == ELOOP ? std::string("is a symbolic link") : std::string("cannot be opened: ") + std::strerror(errno);
    return nullptr;
  }
  if (fstat(fd.get(), &st) != 0) {
    *why = std::string("cannot be read: ") + std::strerror(errno);
    return nullptr;
  }
  const std::string problem = metrics_dir_problem(st, getuid());
  if (!problem.empty()) {
    *why = problem;
    return nullptr;
  }
  if (faccessat(fd.get(), ".", W_OK, AT_EACCESS) != 0) {
    *why = std::string("is not writable by this user (") + std::strerror(errno) + ")";
    return nullptr;
  }
  return std::unique_ptr<task_metrics>(new task_metrics(std::move(fd), dir, every, std::move(id)));
}

task_metrics::task_metrics(owned_fd dir, std::string shown, std::chrono::milliseconds every, metrics_identity id)
    : dir_(std::move(dir)), shown_(std::move(shown)), every_(every), id_(std::move(id)) {}

task_metrics::~task_metrics() {
  // Only the file this process wrote last: the node's next publisher may have replaced it.
  struct stat st {};
  const std::string name = id_.file_name();
  if (wrote_ != 0 && fstatat(dir_.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_ino == wrote_)
    unlinkat(dir_.get(), name.c_str(), 0);
}

std::string task_metrics::update(const node_state& ns, std::int64_t now_ms, bool force) {
  if (!force && written_ms_ != 0 && now_ms - written_ms_ < every_.count()) return "";
  std::string text = task_metrics_text(ns, id_);
  if (text.empty()) return "";
  if (goodput_) text += metrics_text(goodput_->metrics(now_ms, id_.labels()), metrics_format::prometheus);
  const std::string name = id_.file_name();
  // node_exporter reads only *.prom: the temporary name is not one.
  const std::string tmp = "." + name + ".new." + std::to_string(getpid());
  unlinkat(dir_.get(), tmp.c_str(), 0);
  owned_fd fd(openat(dir_.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  std::string error;
  if (!fd) {
    error = std::strerror(errno);
  } else {
    // A textfile is read by node_exporter's user: readable by all (mode 0644, whatever the umask).
    fchmod(fd.get(), 0644);
    struct stat st {};
    const ssize_t n = write(fd.get(), text.data(), text.size());
    if (n != static_cast<ssize_t>(text.size()))
      error = n < 0 ? std::strerror(errno) : "a short write";
    else if (fstat(fd.get(), &st) != 0 || close(fd.release()) != 0 ||
             renameat(dir_.get(), tmp.c_str(), dir_.get(), name.c_str()) != 0)
      error = std::strerror(errno);
    else
      wrote_ = st.st_ino;
  }
  written_ms_ = now_ms;  // a failure waits an interval too
  if (error.empty()) {
    failing_ = false;
    return "";
  }
  unlinkat(dir_.get(), tmp.c_str(), 0);
  if (failing_) return "";
  failing_ = true;
  return shown_ + "/" + name + ": " + error;
}

}  // namespace trainctl
