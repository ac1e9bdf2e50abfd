// Where a user's node state lives, and what in it can be trusted: the state directory's
// policy is in state_dir.cpp, with the sweep of what killed steps left there. The
// state_dir_detail part is internal to protocol/.
#pragma once

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <system_error>

#include "owned_fd.hpp"

namespace trainctl {

// Where this user's node state files live on this node: $XDG_RUNTIME_DIR/trainctl when
// XDG_RUNTIME_DIR names a directory of this user; else /run/trainctl/<uid> when the
// SPANK plugin made it (TRAINCTL_RUN_DIR replaces /run/trainctl); else
// /dev/shm/trainctl-<uid> (TRAINCTL_SHM_DIR replaces /dev/shm, for tests), or, when
// another user took that name first, this user's private /dev/shm/trainctl-<uid>-XXXXXX
// (random, made with mkdtemp; found again by owner and mode 0700), and *note says so in
// one line.
std::string state_dir(std::string* note = nullptr);

// The default path in state_dir(): step_state_name() under SLURM, or keyed by the
// launcher's pid for torchrun outside SLURM, or by the process itself.
std::string default_state_path();

// The parent of each user's node-state directory that the SPANK plugin makes as root
// (<parent>/<uid>, as logind makes /run/user/<uid>).
inline constexpr char kRunParent[] = "/run/trainctl";

// A job step's node state on a node, named in its user's state directory:
// <job>.<step>-<node> (step "batch" for the batch script). The node name is in it
// because several slurmd may share one host (multiple-slurmd, the local test cluster).
// The supervisor's default and the path the plugin gives the command it starts are both
// this, so both find the same file.
std::string step_state_name(const std::string& job, const std::string& step, const std::string& node);

// The first trusted choice of state directory for user `uid`, in state_dir()'s order:
// `xdg`/trainctl when `xdg` (the job's XDG_RUNTIME_DIR) names a directory of that user
// that nobody else can write, else `run_parent`/<uid> when it is one; neither: an empty
// path (state_dir() then uses /dev/shm). Never follows a link.
struct trusted_dir {
  std::string path;
  bool run_dir = false;  // the second: a task holds it (hold_dir_shared)
  struct stat st {};     // its lstat
};
trusted_dir trusted_state_dir(uid_t uid, const std::string& xdg, const std::string& run_parent);

// Holds open directory `fd` (`dir`, whose identity `st` the caller checked) with a
// shared lock, as every task of a user holds their run directory: the plugin's job epilog
// removes the directory only when it can lock it alone, so never while a task uses it.
// Waits up to 2 s for an epilog's sweep. False when it could not lock it, or `dir` is no
// longer that directory (the epilog removed it meanwhile).
bool hold_dir_shared(int fd, const std::string& dir, const struct stat& st);

// Removes node state files in `dir` that no process has open and that are older than
// `min_age_s`, with their lock files, lock and temporary files left without one (what a
// step killed before it could clean up left), and the stack files of processes that are
// gone, whatever their age. Only for state_dir(), which holds
// nothing else. Returns how many files it removed; a directory that is not private is
// left alone. `ended_job`: a job that has ended on this node, whose once-markers
// and node state files (<job>.<step>-<node>, when no process has them open) go at once.
// `unused`: the caller holds the directory's lock alone (the plugin's job epilog), so no
// job of the user runs on this node: every once-marker goes, those of a job that ended
// while another job of the user still held the directory too.
int sweep_stale_state(const std::string& dir, int min_age_s = 60, const std::string& ended_job = "",
                      bool unused = false);

// Whether once-marker `name` (supervisor/once_markers) is job `job`'s: once.<what>.<job>.<more>.
bool claim_of_job(const std::string& name, const std::string& job);

// state_dir(), opened (made 0700 when missing) after the checks every node state file
// gets: for what else keeps per-user, per-node files there (supervisor/once_markers).
// Throws runtime_error (one line) when the directory is refused.
owned_fd open_state_dir();

namespace state_dir_detail {

std::system_error sys_error(const std::string& what);
std::string user_name(uid_t uid);
// What is wrong with a file or directory another user could have planted for `uid`
// (this process's user unless given); "" if nothing.
std::string untrusted(const struct stat& st, bool dir, uid_t uid = getuid());
// Opens (creating it 0700 when missing) a directory only this user can add names to;
// throws a runtime_error whose text is one line when it is not such a directory.
owned_fd open_private_dir(const std::string& dir);

// How long a once-claim is kept when its job's end was never seen.
constexpr std::int64_t kOnceKeepS = std::int64_t{7} * 24 * 3600;

}  // namespace state_dir_detail
}  // namespace trainctl
