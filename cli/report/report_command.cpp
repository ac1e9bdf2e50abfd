// trainctl report JOB: gathers SLURM's record of the tasks and this user's run events,
// prints the report and writes the timeline. Runs on a login node as the job's user.
#include <fcntl.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "commands.hpp"
#include "job_history.hpp"
#include "parse.hpp"
#include "report_metrics.hpp"
#include "report_views.hpp"
#include "run_events.hpp"
#include "slurm_job.hpp"

namespace trainctl::commands {
namespace {

// Writes `text` at `path` whole or not at all: a temporary name created here (O_EXCL,
// never through a symlink), then renamed over the path.
std::string write_whole(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return "cannot create " + tmp + ": " + std::strerror(errno);
  const bool wrote = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  const int saved = errno;
  if (close(fd) != 0 || !wrote || rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = "cannot write " + path + ": " + std::strerror(wrote ? errno : saved);
    unlink(tmp.c_str());
    return why;
  }
  return "";
}

}  // namespace

int show_run_report(const std::string& who, const std::string& job, const std::string& svg_path,
                    const std::string& format) {
  if (!is_job_id(job)) {
    std::fprintf(stderr,
                 "%s report: '%s' is not a job id; accepted: 1234 (a job, or a whole job array) or 1234_5 (one task)\n",
                 who.c_str(), job.substr(0, 40).c_str());
    return 2;
  }
  std::string source, why;
  const std::vector<task_record> tasks = job_tasks(job, &source, &why);
  if (tasks.empty()) {
    std::fprintf(stderr,
                 "%s report %s: SLURM knows no such job (%s); accepted: a job or job array of yours that sacct, "
                 "or slurmctld while it still holds it, can show\n",
                 who.c_str(), job.c_str(), why.c_str());
    return 1;
  }
  const passwd* me = getpwuid(getuid());
  for (const task_record& t : tasks) {
    if (getuid() != 0 && me != nullptr && !t.user.empty() && t.user != me->pw_name) {
      std::fprintf(stderr, "%s report %s: the job is %s's; its report is made from its own user's records\n",
                   who.c_str(), job.c_str(), t.user.c_str());
      return 1;
    }
  }
  // The events are filed under the array's id (or the job's own).
  std::string key = job.substr(0, job.find('_'));
  for (const task_record& t : tasks)
    if (t.name.find('_') != std::string::npos) key = t.name.substr(0, t.name.find('_'));
  const std::string path = run_events_path(key);
  std::string read_why;
  const std::vector<run_event> events = read_run_events(path, &read_why);
  const auto now =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const run_report report = build_run_report(job, tasks, events, now);
  std::string svg_why;
  if (!svg_path.empty()) svg_why = write_whole(svg_path, run_report_svg(report));
  if (format == "json") {
    std::fputs(run_report_json(report).c_str(), stdout);
  } else if (format == "openmetrics" || format == "prometheus") {
    const metrics_format f = format == "openmetrics" ? metrics_format::openmetrics : metrics_format::prometheus;
    std::fputs(metrics_text(run_report_metrics(report), f).c_str(), stdout);
  } else {
    std::fputs(run_report_text(report).c_str(), stdout);
    std::printf("\ntasks from %s; trainctl's events from %s\n", source.c_str(), path.c_str());
    if (!svg_path.empty() && svg_why.empty()) std::printf("timeline    %s\n", svg_path.c_str());
  }
  if (!read_why.empty()) std::fprintf(stderr, "%s report %s: %s\n", who.c_str(), job.c_str(), read_why.c_str());
  if (events.empty() && read_why.empty())
    std::fprintf(stderr,
                 "%s report %s: no trainctl events in %s: its tasks ran without trainctl (or with one older than "
                 "the report), so no training is counted as kept\n",
                 who.c_str(), job.c_str(), path.c_str());
  if (!svg_why.empty()) {
    std::fprintf(stderr, "%s report %s: %s\n", who.c_str(), job.c_str(), svg_why.c_str());
    return 1;
  }
  return 0;
}

}  // namespace trainctl::commands
