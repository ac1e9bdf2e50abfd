#include "state_dir.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "dir_entries.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "node_state.hpp"

namespace trainctl {
namespace state_dir_detail {

std::system_error sys_error(const std::string& what) { return std::system_error(errno, std::generic_category(), what); }

std::string user_name(uid_t uid) {
  passwd pw{};
  passwd* found = nullptr;
  char buf[1024];
  std::string id = "uid " + std::to_string(uid);
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found != nullptr)
    return std::string(pw.pw_name) + " (" + id + ")";
  return id;
}

std::string untrusted(const struct stat& st, bool dir, uid_t uid) {
  if (st.st_uid != uid) return "belongs to " + user_name(st.st_uid) + ", not to " + user_name(uid);
  if (dir && !S_ISDIR(st.st_mode)) return "is not a directory";
  if (!dir && !S_ISREG(st.st_mode)) return "is not a regular file";
  if (dir && (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return std::string("is writable by group or others (mode ") + mode + ")";
  }
  return "";
}

// Opens (creating it 0700 when missing) a directory only this user can add names to.
owned_fd open_private_dir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw sys_error("cannot create node state directory " + dir);
  owned_fd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) {
    if (errno == ELOOP || errno == ENOTDIR)
      throw std::runtime_error("node state directory " + dir + " is a symlink or not a directory: refusing it");
    throw sys_error("cannot open node state directory " + dir);
  }
  struct stat st {};
  const std::string why = fstat(fd.get(), &st) != 0 ? std::strerror(errno) : untrusted(st, true);
  if (!why.empty()) {
    throw std::runtime_error("node state directory " + dir + " " + why +
                             ": refusing it (another user may have made it; remove it, or set TRAINCTL_STATE)");
  }
  return fd;
}

}  // namespace state_dir_detail

using state_dir_detail::kOnceKeepS;
using state_dir_detail::open_private_dir;
using state_dir_detail::sys_error;
using state_dir_detail::untrusted;
using state_dir_detail::user_name;

namespace {
// A directory this user may keep node state in: missing (it will be made, 0700), or
// this user's, a real directory, writable by nobody else. `why` says what is wrong.
bool usable_state_dir(const std::string& dir, std::string* why) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return errno == ENOENT;
  *why = S_ISLNK(st.st_mode) ? "is a symlink" : untrusted(st, true);
  return why->empty();
}
// This user's directories in `root` named `prefix` + 6 characters: real directories of
// this user, mode 0700 (what mkdtemp makes). Another user can make such a name, never
// such a directory. Sorted, so that every process of the user picks the same first one.
std::vector<std::string> own_private_dirs(const std::string& root, const std::string& prefix) {
  std::vector<std::string> found;
  owned_fd dir(open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return found;
  for (const std::string& name : dir_entry_names(dir.get())) {
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    struct stat st {};
    if (fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
        st.st_uid == getuid() && (st.st_mode & 07777) == 0700)
      found.push_back(name);
  }
  std::sort(found.begin(), found.end());
  return found;
}

// The node state directory of a user whose usual name another user took: the first of
// this user's own private directories `root`/`prefix`XXXXXX, made with mkdtemp when there
// is none: a name nobody can guess, and so nobody can take first. Two processes that
// make one at the same moment look again, and the one whose directory is not the first
// removes its own. "" when none can be made.
std::string private_shm_dir(const std::string& root, const std::string& prefix) {
  std::vector<std::string> found = own_private_dirs(root, prefix);
  if (!found.empty()) return root + "/" + found.front();
  std::string made = root + "/" + prefix + "XXXXXX";
  if (mkdtemp(&made[0]) == nullptr) return "";
  found = own_private_dirs(root, prefix);
  if (found.empty()) return made;  // it went again at once: use it all the same
  std::string first = root + "/" + found.front();
  if (first != made) rmdir(made.c_str());
  return first;
}

// The run directory (already checked as `st`), held with a shared lock for the rest of
// this process, as the plugin's tasks hold it, with or without the plugin in this job.
// False when it went meanwhile (the caller uses another place).
bool hold_run_dir(const std::string& dir, const struct stat& st) {
  static std::mutex mu;
  static std::string held_path;
  static owned_fd held_fd;  // for the process's life
  std::lock_guard<std::mutex> lock(mu);
  if (held_fd && held_path == dir) return true;
  owned_fd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd || !hold_dir_shared(fd.get(), dir, st)) return false;
  held_fd = std::move(fd);
  held_path = dir;
  return true;
}
}  // namespace

bool hold_dir_shared(int fd, const std::string& dir, const struct stat& st) {
  struct stat opened {};
  if (fstat(fd, &opened) != 0 || opened.st_ino != st.st_ino || opened.st_dev != st.st_dev) return false;
  bool held = false;
  for (int i = 0; i < 200 && !(held = flock(fd, LOCK_SH | LOCK_NB) == 0); ++i) usleep(10000);
  struct stat now {};
  return held && lstat(dir.c_str(), &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev;
}

trusted_dir trusted_state_dir(uid_t uid, const std::string& xdg, const std::string& run_parent) {
  trusted_dir d;
  // A login node's XDG_RUNTIME_DIR often reaches a compute node where it does not exist.
  if (!xdg.empty() && xdg[0] == '/' && lstat(xdg.c_str(), &d.st) == 0 && untrusted(d.st, true, uid).empty()) {
    d.path = xdg + "/trainctl";
    return d;
  }
  // Made by the SPANK plugin as root before the task starts, under a root-owned parent
  // (as logind makes /run/user/<uid>): nobody else can take the name first.
  const std::string run = run_parent + "/" + std::to_string(uid);
  if (lstat(run.c_str(), &d.st) == 0 && untrusted(d.st, true, uid).empty()) {
    d.path = run;
    d.run_dir = true;
  }
  return d;
}

std::string step_state_name(const std::string& job, const std::string& step, const std::string& node) {
  return job + "." + step + "-" + node;
}

std::string state_dir(std::string* note) {
  const trusted_dir trusted =
      trusted_state_dir(getuid(), env_text(env_var::kXdgRuntimeDir), env_or(env_var::kTrainctlRunDir, kRunParent));
  if (!trusted.path.empty() && (!trusted.run_dir || hold_run_dir(trusted.path, trusted.st))) return trusted.path;
  const std::string uid = std::to_string(getuid());
  std::string why;
  // Without the plugin, /dev/shm: everyone's. A name another user took first is not
  // fought over, nor is a next name anyone could guess too: this user's own directory
  // with a random name (private_shm_dir).
  const std::string shm_root = env_or(env_var::kTrainctlShmDir, "/dev/shm");
  std::string shm = shm_root + "/trainctl-" + uid;
  if (usable_state_dir(shm, &why)) return shm;
  std::string mine = private_shm_dir(shm_root, "trainctl-" + uid + "-");
  if (mine.empty()) {
    if (note != nullptr) *note = shm + " " + why + ", and no private directory could be made in " + shm_root;
    return shm;
  }
  if (note != nullptr) *note = shm + " " + why + ": this user's node state on this node is in " + mine + " instead";
  return mine;
}

std::string default_state_path() {
  std::string key;
  const std::string job = env_text(env_var::kSlurmJobId);
  if (!job.empty()) {
    key = step_state_name(job, env_or(env_var::kSlurmStepId, "batch"), env_or(env_var::kSlurmdNodename, "node"));
  } else if (env_set(env_var::kLocalRank)) {
    // torchrun's workers are children of one agent: its pid names the run on this node.
    key = "ppid" + std::to_string(getppid());
  } else {
    key = "pid" + std::to_string(getpid());
  }
  return state_dir() + "/" + key;
}

bool claim_of_job(const std::string& name, const std::string& job) {
  if (job.empty() || name.compare(0, 5, "once.") != 0) return false;
  const size_t what_end = name.find('.', 5);
  return what_end != std::string::npos && name.compare(what_end + 1, job.size(), job) == 0 &&
         name.size() > what_end + 1 + job.size() && name[what_end + 1 + job.size()] == '.';
}

int sweep_stale_state(const std::string& dir, int min_age_s, const std::string& ended_job, bool unused) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return 0;  // nothing was ever made here
  owned_fd dir_fd;
  try {
    dir_fd = open_private_dir(dir);
  } catch (const std::exception&) {
    return 0;  // not ours: the caller's own open reports it
  }
  const std::int64_t old_enough = unix_now_ms() / 1000 - min_age_s;
  std::vector<std::string> stale;
  for (const std::string& name : dir_entry_names(dir_fd.get())) {
    if (fstatat(dir_fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(st.st_mode) || st.st_uid != getuid()) continue;
    // A rank's Python stack file: kept while its process lives, whatever its age (a new
    // rank that gets the pid of a dead one creates its file exclusively).
    if (name.compare(0, 7, "stacks.") == 0) {
      const long pid = std::strtol(name.c_str() + 7, nullptr, 10);
      if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) stale.push_back(name);
      continue;
    }
    // The ended job's own files go whatever their age: its processes are gone.
    const bool of_ended_job = !ended_job.empty() && name.size() > ended_job.size() &&
                              name.compare(0, ended_job.size(), ended_job) == 0 && name[ended_job.size()] == '.';
    if (name.compare(0, 5, "once.") == 0) {  // a once-marker: kept while its job may still run
      if (unused || st.st_ctim.tv_sec <= old_enough - kOnceKeepS || claim_of_job(name, ended_job))
        stale.push_back(name);
      continue;
    }
    if (st.st_ctim.tv_sec > old_enough && !of_ended_job) continue;
    const bool lock = name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0;
    if (lock || name.find(".new.") != std::string::npos) {
      // A lock whose state file is gone, or a temporary file a killed creator left.
      if (!lock || fstatat(dir_fd.get(), name.substr(0, name.size() - 5).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        stale.push_back(name);
      continue;
    }
    const owned_fd fd(openat(dir_fd.get(), name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) continue;
    std::uint64_t magic = 0;
    // A state by its content, or by its name (default_state_path's keys: "<job>.<step>-
    // <node>", "ppid<N>", "pid<N>") whatever its content: a zeroed or truncated state of
    // a finished job has no magic left and was never swept.
    const bool state_name =
        (name[0] >= '0' && name[0] <= '9') || name.compare(0, 3, "pid") == 0 || name.compare(0, 4, "ppid") == 0;
    const bool is_state =
        state_name ||
        (static_cast<size_t>(st.st_size) == sizeof(node_state) &&
         pread(fd.get(), &magic, sizeof magic, 0) == static_cast<ssize_t>(sizeof magic) && magic == node_state::kMagic);
    if (is_state && flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {  // nobody has it open
      stale.push_back(name);
      stale.push_back(name + ".lock");
    }
  }
  int removed = 0;
  for (const auto& name : stale) removed += unlinkat(dir_fd.get(), name.c_str(), 0) == 0;
  return removed;
}

owned_fd open_state_dir() { return open_private_dir(state_dir()); }

}  // namespace trainctl
