// The processes below a supervisor: the command it starts (shielded from the notices),
// the rank processes it tells to exit (the graceful signal, never to the launcher nor to
// the supervisor's own helpers), when they were first told and why, the line that names
// ranks still running a minute later, and what the command leaves behind.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "run_options.hpp"
#include "task_log.hpp"

namespace trainctl {

class task_processes {
 public:
  // Whether a process is one of the supervisor's own helpers (the hook, a stacks child,
  // a query): never a rank, never a leftover.
  using helper_test = std::function<bool(pid_t)>;
  task_processes(const supervisor_options& opts, helper_test is_helper, task_log& log)
      : opts_(opts), is_helper_(std::move(is_helper)), log_(log) {}

  // Forks and execs argv (argv[0] from PATH) with no signal blocked and the shield's
  // ignored; -1 when it cannot fork (said in a line). An already running task (`adopt`)
  // is taken as it is.
  pid_t start(char* const* argv);
  void adopt(pid_t pid) { child_ = pid; }
  pid_t child() const { return child_; }
  // A status waitpid(-1) reaped: true when it was the command's.
  bool reaped(pid_t pid, int status);
  bool done() const { return done_; }
  int status() const { return status_; }

  // Sends the graceful signal to every rank process; one line with how many.
  void signal_ranks(const char* why) const;
  // SIGKILL to everything below the supervisor but its helpers (a hung rank ignores
  // polite signals).
  void kill_all() const;
  // Ends (TERM, then KILL) what the command left behind once it ended.
  void end_leftovers() const;

  // The ranks were told to exit, for `why`: only the first time counts.
  void told_to_exit(const char* why);
  std::int64_t told_ms() const { return told_ms_; }  // unix ms; 0: not told
  const std::string& told_why() const { return told_why_; }
  // Names the ranks still running after they were told, once (`when`: the moment's
  // words, e.g. ", when SIGTERM came"); a rank `writing` says waits at its end for its
  // save's write (an asynchronous save) is named as such, not as one that ignored it.
  void report_lingering(const char* when);
  void set_writing(helper_test writing) { writing_ = std::move(writing); }
  // How long until the lingering ranks are reported (at most `cap`), and the report when due.
  std::chrono::milliseconds wait(std::chrono::milliseconds cap) const;
  void tick();

  // A rank still running this long after it was told to exit gets a line.
  static constexpr std::int64_t kReportAfterMs = 60000;

 private:
  const supervisor_options& opts_;
  helper_test is_helper_;
  helper_test writing_;
  task_log& log_;
  pid_t child_ = 0;
  bool done_ = false;
  int status_ = 0;
  std::int64_t told_ms_ = 0;
  std::string told_why_;
  bool reported_ = false;
};

}  // namespace trainctl
