// Finding the rank processes under a launcher, from /proc: the topmost descendants of
// the supervisor that carry a rank variable (RANK, LOCAL_RANK, OMPI_COMM_WORLD_RANK,
// PMI_RANK, PMIX_RANK) in their environment. DataLoader workers inherit their rank's
// environment but sit below it, so they are never chosen; processes of other users are
// never even read.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace trainctl {

struct proc_info {
  pid_t pid = 0;
  pid_t ppid = 0;
  bool ours = false;      // same uid as this process
  bool has_rank = false;  // carries a rank variable
  bool launcher = false;  // argv[0] or argv[1] names a known launcher
};

// Every process below `root` (not root itself), read from `proc` ("/proc").
std::vector<proc_info> descendants(pid_t root, const std::vector<std::string>& launcher_names,
                                   const std::string& proc = "/proc");

// The ranks below `root`. With no rank variable anywhere, and `command_is_rank`, the
// direct children of root that are not launchers (`srun python train.py`: the command
// itself is the rank).
std::vector<pid_t> find_ranks(pid_t root, const std::vector<std::string>& launcher_names, bool command_is_rank,
                              const std::string& proc = "/proc");

// Pieces for tests and fuzzing.
bool environ_has_rank(const std::string& environ_blob);
bool cmdline_names_launcher(const std::string& cmdline_blob, const std::vector<std::string>& launcher_names);
pid_t parse_stat_ppid(const std::string& stat_text);

}  // namespace trainctl
