// Hang diagnosis: every rank's Python stack (all threads, written by the rank itself
// through faulthandler on the stack signal) and native stack (eu-stack, else gdb, from
// outside, under a time limit per rank) into one file per rank, and a summary that
// says where the ranks are stuck. Runs in the supervisor or in trainctl-run
// --dump-stacks, as the user.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "ranks.hpp"

namespace trainctl {

struct rank_stack {
  int rank = -1;  // from the process's rank variables; -1 when it has none
  pid_t pid = 0;
  std::string host;
  std::string frame;  // the innermost frame of the main thread: "train (train.py:42)"
  std::string file;   // where the stacks went
  bool python = false, native = false;
};

struct dump_options {
  std::string out_dir;                          // rank<R>.txt files go here (created)
  std::string python_dir;                       // where ranks write stacks.<pid> unless their TRAINCTL_STATE says
  int stack_signal = 0;                         // the ranks' faulthandler signal; 0: none
  std::chrono::milliseconds per_rank{10000};    // native stack time limit
  std::chrono::milliseconds python_wait{2000};  // how long a rank may take to write its own
  std::string reason;                           // what the file's header says
};

// The stack signal: TRAINCTL_STACK_SIGNAL (a name or number, "none"), default URG, as
// the Python package reads it.
int stack_signal_from_env();

// Dumps every process in `ranks`; one file per rank in o.out_dir, appended.
std::vector<rank_stack> dump_stacks(const std::vector<proc_info>& ranks, const dump_options& o);

// The innermost frame of the main thread in a faulthandler dump ("" when none).
std::string innermost_python_frame(const std::string& faulthandler_text);
// The innermost frame of thread `pid` in eu-stack or gdb output ("" when none).
std::string innermost_native_frame(const std::string& native_text, pid_t pid);

// One line: the frame most ranks are stuck in, and the ranks stuck elsewhere.
std::string summarize(const std::vector<rank_stack>& stacks);
// The nodes of the ranks stuck elsewhere than most, when they are fewer than half:
// the suspects of a hang (empty when there is no clear odd one out).
std::set<std::string> suspect_hosts(const std::vector<rank_stack>& stacks);
// The rank_stack lines that dump_stacks wrote in `dir` (header lines of rank*.txt),
// the newest dump of each rank, from files written at or after `since` (unix seconds):
// a file from an earlier dump is not this stall's.
std::vector<rank_stack> read_dumps(const std::string& dir, std::int64_t since = 0);

}  // namespace trainctl
