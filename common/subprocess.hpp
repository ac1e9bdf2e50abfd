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
#include <vector>

namespace trainctl {

struct child_spec {
  std::vector<std::string> argv;      // exec'd, argv[0] looked up in PATH; or, when empty,
  std::function<std::string()> work;  // run in the forked child: what it returns is the output
  std::string input;                  // written to the child's stdin, which is then closed
  std::chrono::milliseconds deadline{10000};
  std::size_t max_output = 1 << 20;  // more is read and dropped
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

}  // namespace trainctl
