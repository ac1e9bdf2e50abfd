#include "drill_job.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <thread>

#include "job_access.hpp"
#include "owned_fd.hpp"
#include "private_files.hpp"
#include "subprocess.hpp"

namespace trainctl::commands {

using std::chrono::milliseconds;

volatile std::sig_atomic_t g_drill_interrupted = 0;
namespace {
extern "C" void on_interrupt(int) { g_drill_interrupted = 1; }
}  // namespace

void catch_drill_interrupts() {
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  std::signal(SIGHUP, on_interrupt);  // the terminal closed: the drill still cancels and tidies
}

std::int64_t unix_ms_now() {
  return std::chrono::duration_cast<milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

drill_job::~drill_job() {
  child_spec c;
  c.argv = {"scancel", id_};
  c.deadline = milliseconds(15000);
  (void)run_child(c);
}

const std::vector<run_event>& event_watch::read() {
  std::string why;
  events_ = read_run_events(path_, &why);
  events_.erase(std::remove_if(events_.begin(), events_.end(), [&](const run_event& e) { return e.ms < since_ms_; }),
                events_.end());
  return events_;
}

const run_event* event_watch::find(const std::string& what, const std::string& job, std::int64_t since,
                                   const std::string& reason) const {
  for (const run_event& e : events_)
    if (e.what == what && (job.empty() || e.job == job) && e.ms >= since && (reason.empty() || e.reason == reason))
      return &e;
  return nullptr;
}

const run_event* event_watch::after(const run_event& after, const std::string& what) const {
  bool past = false;
  for (const run_event& e : events_) {
    if (&e == &after) past = true;
    if (past && &e != &after && e.what == what && e.job == after.job) return &e;
  }
  return nullptr;
}

std::set<std::string> drill_task_jobs(const std::string& array, const std::vector<run_event>& events,
                                      std::int64_t since_ms) {
  std::set<std::string> jobs{array};
  for (const run_event& e : events)
    if (e.ms >= since_ms && !e.job.empty()) jobs.insert(e.job);
  return jobs;
}

bool wait_until(milliseconds limit, const std::function<bool()>& done) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (g_drill_interrupted == 0) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(milliseconds(500));
  }
  return false;
}

std::optional<job_times> job_record_of(const std::string& job) {
  std::string why;
  const auto line = scontrol_show("job", job, milliseconds(15000), &why);
  if (!line) return std::nullopt;
  return parse_scontrol_job(line->substr(0, line->find('\n')));
}

std::string touch_switch(const std::string& path) {
  const owned_fd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644));
  if (!fd) return "cannot touch " + path + ": " + std::strerror(errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return path + " is not a regular file";
  if (futimens(fd.get(), nullptr) != 0) return "cannot touch " + path + ": " + std::strerror(errno);
  return "";
}

std::string signal_rank(const std::string& job, int rank, const char* sig) {
  std::string why;
  const auto line = scontrol_show("job", job, milliseconds(15000), &why);
  if (!line) return "";
  const job_record rec = parse_job_record(line->substr(0, line->find('\n')));
  child_spec c;
  c.argv = srun_helper_on_each_node(rec, {"--signal-rank-here=" + job + ":" + std::to_string(rank) + ":" + sig});
  c.deadline = milliseconds(60000);
  const child_result r = run_child(c);
  std::istringstream in(r.output);
  for (std::string l; std::getline(in, l);)
    if (l.rfind("signalled ", 0) == 0) return l;
  return "";
}

std::string line_field(const std::string& line, const std::string& key) {
  const size_t at = line.find(" " + key + "=");
  if (at == std::string::npos) return "";
  const size_t from = at + key.size() + 2;
  return line.substr(from, line.find(' ', from) - from);
}

std::string hang_summary(const std::string& log_dir, const std::string& job) {
  const passwd* me = getpwuid(getuid());
  if (me == nullptr || log_dir.empty()) return "";
  const std::string path = log_dir + "/trainctl-" + me->pw_name + "/stacks-" + job + "/summary.txt";
  std::string why;
  const std::string text = read_private(path, 1 << 20, &why, true);
  std::string last;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l.find(" ranks in ") != std::string::npos && l.find("only ") == std::string::npos) last = l;
  // Each line begins with its time (health/hang_dump's timed_line): the table shows the summary.
  const size_t space = last.find(' ');
  return space == std::string::npos ? last : last.substr(space + 1);
}

}  // namespace trainctl::commands
