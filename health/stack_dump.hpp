// Hang diagnosis: every rank's Python stack (all threads, written by the rank itself
// through faulthandler on the stack signal) and native stack (eu-stack, else gdb, from
// outside, under a time limit per rank) into one file per rank, and a summary that
// says where the ranks are stuck. Runs in the supervisor or in trainctl-run
// --dump-stacks, as the user.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "owned_fd.hpp"
#include "ranks.hpp"

namespace trainctl {

struct rank_stack {
  int rank = -1;  // from the process's rank variables; -1 when it has none
  pid_t pid = 0;
  std::string host;
  std::string frame;  // the innermost frame of the main thread: "train (train.py:42)"
  std::string file;   // where the stacks went; "" when they could not be saved
  std::string error;  // why not
  bool python = false, native = false;
  std::vector<std::string> collectives;  // its flight recorder's digest (flight_recorder.hpp); none when not asked
  std::string caller;  // the innermost frame of the program's own code (outside torch and trainctl); "" unknown
  char state = 0;      // its /proc state before the stacks were taken: 'D' waits in the kernel (a device, a filesystem)
};

// Which dump a file belongs to. Files are told apart by what trainctl wrote into them,
// in a directory only this user can write (open_stacks_dir), never by name or mtime.
struct dump_id {
  std::string run;         // "<job>.<restart count>" (or "pid<supervisor>" outside SLURM)
  std::string kind;        // "hang", "start" (before the first agreement), "on demand"
  std::int64_t at_ms = 0;  // when this node's dump began (unix ms)
};

struct dump_options {
  std::string out_dir;      // for messages; the files go into dir_fd
  int dir_fd = -1;          // open_stacks_dir's descriptor
  mode_t file_mode = 0600;  // 0640 in a group log directory
  dump_id id;
  std::string python_dir;                         // where ranks write stacks.<pid> unless their TRAINCTL_STATE says
  int stack_signal = 0;                           // the ranks' faulthandler signal; 0: none
  std::chrono::milliseconds per_rank{10000};      // native stack time limit
  std::chrono::milliseconds python_wait{2000};    // how long a rank may take to write its own
  std::chrono::milliseconds recorder_wait{5000};  // ... and its flight recorder's dump
  std::string reason;                             // what the file's header says
};

// The stack signal: TRAINCTL_STACK_SIGNAL (a name or number, "none"), default URG, as
// the Python package reads it.
int stack_signal_from_env();

// Checks a log directory before anything is written there, creating it (private, as
// this user) when missing: "" when usable, else one line that says why not. Whether it
// is a group directory (group-writable: a team's shared logs) comes back in *group.
std::string prepare_log_dir(const std::string& dir, bool* group = nullptr);

// Where this user's per-job evidence goes in `log_dir` (stacks-<job>/, a step's crash
// evidence): LOG_DIR/trainctl-<user>, made by this user (0750 when `group`, else 0700),
// never a link, nobody else's and writable by nobody else, so that no one can make
// stacks-<job>/ or a step's evidence there before the job does. When another user took
// that name first: the user's own directory under the home instead
// (~/.local/state/trainctl/evidence), the same on every node of the job (the home is
// shared), and *note says so in one line. "" and one line in *why when neither can be
// used. Made when missing; runs in the children that write there (a mount may stall).
std::string evidence_root(const std::string& log_dir, bool group, std::string* why, std::string* note = nullptr);

// Opens the stacks directory `path` (creating it, 0700, or 0750 when `group`), with
// O_NOFOLLOW: refused, with one line in *why and -1, when it is not a directory, not
// this user's, or writable by anyone else (another user's files there could pose as
// stacks, or as a summary that is really a link to the user's files).
owned_fd open_stacks_dir(const std::string& path, bool group, std::string* why);

// Dumps every process in `ranks`; one file per rank in o.dir_fd, appended. A file that
// could not be written has rank_stack::file empty.
std::vector<rank_stack> dump_stacks(const std::vector<proc_info>& ranks, const dump_options& o);

// Opens `name` in `dir_fd` with `flags` (O_NOFOLLOW and O_NONBLOCK added): a regular
// file of this user only, else none with errno EPERM (a link, a FIFO, another user's).
owned_fd open_own_file(int dir_fd, const std::string& name, int flags, mode_t mode);
// What `name` in `dir_fd` holds (its first 8 MiB): a regular file of this user only,
// opened as open_own_file does; "" when it is none, or not there.
std::string read_own_text(int dir_fd, const std::string& name);
// Appends `line` to `name` in the stacks directory: a regular file of this user only,
// never through a link, never blocking (a FIFO is refused). "" or why not.
std::string append_in_dir(int dir_fd, const std::string& name, const std::string& line, mode_t mode);
// How many job-wide lines summary.txt in the stacks directory holds: the lines whose
// text (after the time) does not begin "only " (another node's own view). Read as
// append_in_dir writes: this user's regular file only, no link, no block.
std::size_t job_wide_summaries(int dir_fd);

// The innermost frame of the main thread in a faulthandler dump ("" when none):
// the block of thread `main_thread` ("0x..." as trainctl's Python package wrote it
// first in the file) when given, else the block that ends in the module's frame.
// Never another thread's frame. With `programs_own`, the innermost frame outside torch and
// trainctl's package: the program's line that called into them (a collective's caller).
std::string innermost_python_frame(const std::string& faulthandler_text, const std::string& main_thread = "",
                                   bool programs_own = false);
// The innermost frame of thread `pid` in eu-stack or gdb output ("" when none).
std::string innermost_native_frame(const std::string& native_text, pid_t pid);

// The dumps in the stacks directory that belong to run `run` and kind `kind` and began
// at or after `since_ms`: the newest of each rank, read from the headers dump_stacks
// wrote. Only regular files of this user, opened without following links or blocking.
std::vector<rank_stack> read_dumps(int dir_fd, const std::string& run, const std::string& kind, std::int64_t since_ms);

// Writes every rank's stacks on this node for job `job_id` (found in /proc, not below a
// supervisor) into stacks-JOB/ of the user's evidence root in `log_dir` ("fallback:DIR":
// the ranks' TRAINCTL_LOG_DIR, else DIR); prints one "stack rank=R pid=P host=H dir=D frame=F" line per rank on
// stdout, each followed by "caller rank=R FRAME" (its program's own innermost frame,
// where known) and a "collective rank=R DIGEST" line per line of its flight recorder's
// digest (flight_recorder.hpp). trainctl stacks runs it on each node of the
// job through srun.
int dump_job_stacks_here(const std::string& job_id, std::string log_dir, const std::string& reason);

}  // namespace trainctl
