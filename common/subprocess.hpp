// Every child process the tools start goes through run_child: scontrol and squeue, the
// quota command, sendmail, and statfs on a mount that may hang. One deadline covers
// writing the input, reading the output and the exit; past it the child's process group
// is killed and the child abandoned, never waited for (a process stuck in the kernel on
// a dead mount cannot die, and waiting for it would hang the caller with it).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "owned_fd.hpp"

namespace trainctl {

struct child_spec {
  std::vector<std::string> argv;      // exec'd, argv[0] looked up in PATH; or, when empty,
  std::function<std::string()> work;  // run in the forked child: what it returns is the output
  std::string input;                  // written to the child's stdin, which is then closed
  std::chrono::milliseconds deadline{10000};
  std::size_t max_output = 1 << 20;  // more is read and dropped
  // Ignored in the child (SIG_IGN survives exec): a query the supervisor runs must
  // outlive the TERM that SLURM sends to every process of the step.
  std::vector<int> ignore_signals;
  bool merge_stderr = false;  // stderr into the output too (else /dev/null)
  // Sent to the child when the caller dies (PR_SET_PDEATHSIG; 0: none): a helper step
  // the CLI started (srun) must not outlive a CLI killed with -9.
  int parent_death_signal = 0;
};

struct child_result {
  bool finished = false;  // exited within the deadline (else killed and abandoned)
  int status = 0;         // wait status, when finished
  std::string output;     // stdout (stderr goes to /dev/null)
  std::string error;      // one line saying why ok() is false, naming the command
  bool ok() const;        // finished and exited 0
};

// Never throws; the calling thread's signal mask and dispositions are as they were
// (a child that exits without reading its input costs no SIGPIPE).
child_result run_child(const child_spec& spec);

// A child started now and finished by the caller's own event loop, for a caller that
// reaps every child itself (the supervisor, a subreaper): the caller reads `out_fd`
// (non-blocking) as it likes, reaps `pid`, and kills the group (-pid) past its deadline.
// No input. The destructor closes the descriptor, never waits.
class started_child {
 public:
  explicit started_child(const child_spec& spec);
  ~started_child();
  started_child(const started_child&) = delete;
  started_child& operator=(const started_child&) = delete;

  pid_t pid() const { return pid_; }
  const std::string& error() const { return error_; }  // "" when it started
  // Reads what the child wrote so far into output().
  void drain();
  const std::string& output() const { return output_; }
  // What was read so far, handed over and cleared: a caller that streams a long-lived
  // child's output is not cut off at max_output.
  std::string take_output() { return std::exchange(output_, std::string()); }
  int output_fd() const { return out_fd_.get(); }  // for the caller's poll; -1 when none
  // The result for the wait status the caller reaped (drains first).
  child_result finish(int wait_status);
  // Kills the child's group and gives it up (the caller's reaping collects it later).
  child_result abandon();
  // For a caller that reaps its children itself and has nothing else to do (its end):
  // waits at most `bound` for the child to exit, looking every 50 ms. True with its
  // wait status in *status when it did (or never started); false: still running.
  bool wait_exit(std::chrono::milliseconds bound, int* status);

 private:
  child_spec spec_;
  pid_t pid_ = -1;
  owned_fd out_fd_;
  std::string output_, error_;
};

}  // namespace trainctl
