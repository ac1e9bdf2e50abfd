// Finding the rank processes under a launcher, from /proc: the topmost descendants of
// the supervisor that carry a rank variable (RANK, LOCAL_RANK, OMPI_COMM_WORLD_RANK,
// PMI_RANK, PMIX_RANK) in their environment. DataLoader workers inherit their rank's
// environment but sit below it, so they are never chosen; processes of other users are
// never even read.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "owned_fd.hpp"

namespace trainctl {

struct proc_info {
  pid_t pid = 0;
  pid_t ppid = 0;
  bool ours = false;                  // same uid as this process
  bool has_rank = false;              // carries a rank variable
  bool launcher = false;              // argv[0] or argv[1] names a known launcher
  unsigned long long start_time = 0;  // clock ticks after boot: with pid, names one process
};

// Every process below `root` (not root itself), read from `proc` ("/proc").
std::vector<proc_info> descendants(pid_t root, const std::vector<std::string>& launcher_names,
                                   const std::string& proc = "/proc");

// The ranks below `root`. With no rank variable anywhere, and `command_is_rank`, the
// direct children of root that are not launchers (`srun python train.py`: the command
// itself is the rank).
std::vector<pid_t> find_ranks(pid_t root, const std::vector<std::string>& launcher_names, bool command_is_rank,
                              const std::string& proc = "/proc");

// The same, with what identifies each process (for pid_handle).
std::vector<proc_info> find_rank_procs(pid_t root, const std::vector<std::string>& launcher_names, bool command_is_rank,
                                       const std::string& proc = "/proc");

// The rank processes of job `job_id` on this node, whoever started them: topmost
// processes of this user that carry a rank variable and SLURM_JOB_ID=job_id
// (trainctl-run --dump-stacks, from outside the job's supervisors).
std::vector<proc_info> find_job_rank_procs(const std::string& job_id, const std::vector<std::string>& launcher_names,
                                           const std::string& proc = "/proc");

// NAME's value in process `pid`'s environment; "" when unset or unreadable.
std::string proc_environ_value(pid_t pid, const std::string& name, const std::string& proc = "/proc");
// The rank number process `pid` carries: the launcher's (RANK, then MPI's
// OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK), else SLURM_PROCID, a step task's own (`srun
// python train.py`); -1 when it carries none. libtrainctl's config reads the same order.
int proc_rank(pid_t pid, const std::string& proc = "/proc");

// A process found in /proc, held by a pidfd that is kept only if the pid still names
// the process that was found (the same start time): a signal sent through it reaches
// that process or nobody, never a process that got its pid later.
class pid_handle {
 public:
  explicit pid_handle(const proc_info& found, const std::string& proc = "/proc");
  pid_handle(pid_handle&&) noexcept = default;
  pid_handle& operator=(pid_handle&&) = delete;

  bool held() const { return static_cast<bool>(fd_); }
  pid_t pid() const { return pid_; }
  bool signal(int sig) const;  // false when the process is gone (or was never held)
  bool alive() const { return signal(0); }

 private:
  owned_fd fd_;
  pid_t pid_ = 0;
};

// The wait status of zombie `pid` from /proc/<pid>/stat (exit_code, field 52): -1 when
// the process is not a zombie (or no longer there).
int zombie_wait_status(pid_t pid);
// Whether `pid` is a live process of this user: not gone, not a zombie, not another
// user's (kill(pid, 0) says yes to all three).
bool live_process_of_mine(pid_t pid);
// A fault signal: a death by it is evidence against the node it ran on.
bool is_fault_signal(int sig);

// Pieces for tests and fuzzing.
bool environ_has_rank(const std::string& environ_blob);
// NAME's value in a NUL-separated environment; "" when unset.
std::string environ_value(const std::string& environ_blob, const std::string& name);
bool cmdline_names_launcher(const std::string& cmdline_blob, const std::vector<std::string>& launcher_names);
pid_t parse_stat_ppid(const std::string& stat_text);
unsigned long long parse_stat_start_time(const std::string& stat_text);  // 0 when unreadable

}  // namespace trainctl
