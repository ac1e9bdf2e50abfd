#include "notice_hook.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

#include "env.hpp"
#include "env_names.hpp"
#include "node_state.hpp"
#include "once_markers.hpp"
#include "parse.hpp"
#include "slurm_job.hpp"
#include "state_dir.hpp"

namespace trainctl {

namespace {

std::string unix_seconds(std::int64_t ms) { return ms > 0 ? std::to_string(ms / 1000) : ""; }

}  // namespace

notice_hook::notice_hook(std::string command, std::chrono::milliseconds limit, std::vector<int> shield, logger log)
    : command_(std::move(command)), limit_(limit), shield_(std::move(shield)), log_(std::move(log)) {}

notice_hook::~notice_hook() {
  if (pid_ <= 0) return;
  end_group(SIGKILL);
  waitpid(pid_, nullptr, 0);
}

void notice_hook::notice(const char* kind, std::int64_t deadline_ms, std::int64_t end_ms, const std::string& detail) {
  if (command_.empty()) return;
  const std::string node = env_text(env_var::kSlurmNodeid);
  if (!node.empty() && node != "0") return;  // the first node only
  // Once per kind for this run of the job on this node: the batch step's and the
  // steps' supervisors all see the same notice. A requeued job runs it again.
  // Outside SLURM this supervisor is the only one: it remembers the kinds itself.
  const std::string job = env_text(env_var::kSlurmJobId);
  if (ran_.find(std::string(kind) + ",") != std::string::npos) return;
  if (pid_ > 0) {
    log_("on-notice: " + std::string(kind) + ": the command for the " + kind_ +
         " notice still runs; not starting another");
    return;
  }
  ran_ += std::string(kind) + ",";
  const std::string restart =
      env_text(env_var::kSlurmRestartCount).empty() ? "0" : env_text(env_var::kSlurmRestartCount);
  // The run: the job id, its restart count and its start time (SLURM_JOB_START_TIME
  // where SLURM sets it, 23.02+; else what the controller said).
  std::string start = env_text(env_var::kSlurmJobStartTime);
  if (start.empty() && run_start_ms_ == 0 && !job.empty()) {
    // Every supervisor of the node must name the run alike, also one that never asked
    // the controller (a follower): ask now, briefly. The notice itself went out before.
    const auto line = scontrol_show("job", job, std::chrono::milliseconds(3000), nullptr);
    const auto jt = line ? parse_scontrol_job(*line) : std::nullopt;
    if (jt) run_start_ms_ = jt->start_ms;
  }
  if (start.empty() && run_start_ms_ > 0) start = std::to_string(run_start_ms_ / 1000);
  const std::string marker = "once.on-notice." + job + "." + restart + "." + (start.empty() ? "?" : start) + "." + kind;
  try {
    if (!job.empty() && !claim_once(marker)) {
      log_("on-notice: " + std::string(kind) + ": not running the command: another supervisor on this node ran it " +
           "for this run of job " + job + " (marker " + state_dir() + "/" + marker + ")");
      return;
    }
  } catch (const std::exception& e) {
    log_(std::string("on-notice: ") + e.what() + "; running the command without knowing whether another did");
  }
  const std::string deadline = unix_seconds(deadline_ms), end = unix_seconds(end_ms);
  const pid_t pid = fork();
  if (pid < 0) {
    log_(std::string("on-notice: cannot start the command: fork: ") + std::strerror(errno));
    return;
  }
  if (pid == 0) {
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : shield_) signal(sig, SIG_IGN);
    setenv("TRAINCTL_NOTICE", kind, 1);
    setenv("TRAINCTL_DEADLINE", deadline.c_str(), 1);
    setenv("TRAINCTL_END_TIME", end.c_str(), 1);
    setenv("TRAINCTL_NOTICE_DETAIL", detail.c_str(), 1);
    execl("/bin/sh", "sh", "-c", command_.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);  // also here: the limit may be enforced before the child ran
  pid_ = pid;
  kind_ = kind;
  started_ = std::chrono::steady_clock::now();
  killed_ = false;
  log_("on-notice: " + kind_ + ": running the command (pid " + std::to_string(pid) + ", time limit " +
       format_duration(limit_) + ")");
}

void notice_hook::end_group(int sig) const {
  if (kill(-pid_, sig) != 0) kill(pid_, sig);
}

bool notice_hook::reaped(pid_t pid, int status) {
  if (pid_ <= 0 || pid != pid_) return false;
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started_);
  std::string how;
  if (killed_)
    how = "ended at its time limit of " + format_duration(limit_);
  else if (WIFEXITED(status))
    how = "exited with status " + std::to_string(WEXITSTATUS(status));
  else
    how = "was killed by signal " + std::to_string(WTERMSIG(status));
  log_("on-notice: " + kind_ + ": the command " + how + " after " + format_duration(took));
  // Whatever it left in its group goes with it.
  kill(-pid_, SIGKILL);
  pid_ = 0;
  return true;
}

std::chrono::milliseconds notice_hook::tick() {
  using std::chrono::milliseconds;
  if (pid_ <= 0) return milliseconds::max();
  const auto ran = std::chrono::steady_clock::now() - started_;
  if (ran < limit_) return std::chrono::duration_cast<milliseconds>(limit_ - ran) + milliseconds(1);
  if (!killed_) end_group(SIGKILL);
  killed_ = true;
  return milliseconds(100);  // until the supervisor reaps it
}

void notice_hook::finish() {
  while (pid_ > 0) {
    int status = 0;
    const pid_t p = waitpid(pid_, &status, WNOHANG);
    if (p == pid_ || (p < 0 && errno == ECHILD)) {
      reaped(pid_, status);
      break;
    }
    tick();
    usleep(50000);
  }
}

}  // namespace trainctl
