// The commit marker: its text, and writing or removing one (committed_saves.hpp).
// Reading markers back to find the save to resume from is resume_scan.cpp.
#include "committed_saves.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <stdexcept>
#include <system_error>

#include "commit_marker_io.hpp"
#include "env_names.hpp"
#include "owned_fd.hpp"
#include "parse.hpp"
#include "run_id.hpp"

namespace trainctl {
namespace {

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// What sits under `name` in `dir` where a marker should go, for the line that says why
// it could not: "a directory of uid 1002", "a file of uid 1002".
std::string squatter(int dir, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return "";
  const char* kind = S_ISDIR(st.st_mode) ? "a directory" : S_ISLNK(st.st_mode) ? "a link" : "a file";
  return std::string(kind) + (st.st_uid == ::geteuid() ? " of yours" : " of uid " + std::to_string(st.st_uid));
}

// A temporary name no other user can guess ahead of time (a predictable one can be
// squatted in a directory a team shares, failing every save's commit).
std::string temporary_name() {
  unsigned char bytes[8] = {};
  if (::getrandom(bytes, sizeof bytes, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof bytes)) {
    const auto t = static_cast<unsigned long long>(::getpid()) ^ static_cast<unsigned long long>(::time(nullptr));
    std::memcpy(bytes, &t, sizeof bytes);
  }
  char hex[2 * sizeof bytes + 1];
  for (std::size_t i = 0; i < sizeof bytes; ++i) std::snprintf(hex + 2 * i, 3, "%02x", bytes[i]);
  return std::string(".trainctl-tmp.") + hex;
}

// Writes `text` as `name` in `dir` whole: a temporary name of its own, fsync, rename
// over `name` (a link planted under `name` is replaced, never followed), then the
// directory synced. Throws std::system_error naming what is in the way.
void write_whole(int dir, const std::string& name, const std::string& text, const std::string& shown) {
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  std::string tmp;
  owned_fd fd;
  for (int tries = 0; tries < 4 && !fd; ++tries) {
    tmp = temporary_name();
    fd.reset(::openat(dir, tmp.c_str(), flags, 0644));
    if (!fd && errno != EEXIST) break;
  }
  if (!fd) throw_errno("trainctl: saved(): cannot write " + shown);
  const bool written = ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                       ::fsync(fd.get()) == 0 && ::close(fd.release()) == 0;
  if (!written || ::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(dir, tmp.c_str(), 0);
    const std::string there = squatter(dir, name);
    errno = err;
    throw_errno("trainctl: saved(): cannot write " + shown + (there.empty() ? "" : " (" + there + " is in its place)"));
  }
  ::fsync(dir);  // the rename lasts; some file systems refuse a directory's fsync (EINVAL): still written
}

std::string strip_slashes(const std::string& given) {
  std::string path = given;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

// The directory holding `path` and `path`'s last name.
std::pair<std::string, std::string> split_path(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

}  // namespace

std::string save_attempt(const env_lookup& env) {
  const std::string job = env(env_var::kSlurmJobId), restarts = env(env_var::kSlurmRestartCount);
  const bool job_ok = !job.empty() && job.size() <= 20 && valid_attempt(job);
  const bool restarts_ok = !restarts.empty() && all_digits(restarts, 9);
  return (job_ok ? job : std::string("local")) + "." + (restarts_ok ? restarts : std::string("0"));
}

void commit_checkpoint(const std::string& given, commit_marker m) {
  if (m.step < 0 || m.step > kMaxStep || m.world < 1 || m.world > kMaxWorld || m.rank < 0 || m.rank >= m.world)
    throw std::invalid_argument("trainctl: saved(): step " + std::to_string(m.step) + " of rank " +
                                std::to_string(m.rank) + " in a world of " + std::to_string(m.world) +
                                "; accepted: a step of 0 or more, a rank below the world size");
  const std::string path = strip_slashes(given);
  const std::string accepted =
      "; accepted: the checkpoint directory or file this rank just wrote, this user's, not a link";
  struct stat st {};
  if (path.empty() || ::lstat(path.c_str(), &st) != 0)
    throw std::invalid_argument("trainctl: saved(): '" + given + "' does not exist" + accepted);
  if (!owned_by_me(st) || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
    throw std::invalid_argument("trainctl: saved(): '" + given + "' is " +
                                (S_ISLNK(st.st_mode) ? "a link"
                                 : !owned_by_me(st)  ? "another user's"
                                                     : "no directory or file") +
                                accepted);
  const auto [parent, base] = split_path(path);
  // The directory holding it may be a link (a checkpoint directory on scratch, linked
  // from the project's), but not one a teammate put there: it could lead anywhere.
  const std::string behind = foreign_link(parent);
  if (!behind.empty())
    throw std::invalid_argument("trainctl: saved(): '" + given + "' lies behind " + behind + accepted);
  m.name = base;
  m.version = 2;
  if (m.attempt.empty()) m.attempt = save_attempt(env_text);
  const std::string text = format_commit_marker(m);
  if (S_ISDIR(st.st_mode)) {
    owned_fd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir || ::fstat(dir.get(), &st) != 0 || !owned_by_me(st)) throw_errno("trainctl: saved(): cannot open " + path);
    const std::string name = marker_name(kMarkerInside, m.rank);
    write_whole(dir.get(), name, text, path + "/" + name);
    return;
  }
  const std::string name = marker_name(marker_prefix_beside(base), m.rank);
  if (name.size() > kMaxNameBytes)
    throw std::invalid_argument("trainctl: saved(): the name of '" + given +
                                "' is too long to mark beside it; accepted: a file name of up to 200 bytes");
  owned_fd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) throw_errno("trainctl: saved(): cannot open " + parent);
  write_whole(dir.get(), name, text, parent + "/" + name);
}

void uncommit_checkpoint(const std::string& given, std::int64_t rank) noexcept {
  if (rank < 0) return;
  const std::string path = strip_slashes(given);
  struct stat st {};
  if (path.empty() || ::lstat(path.c_str(), &st) != 0 || !owned_by_me(st)) return;
  const auto [parent, base] = split_path(path);
  try {
    if (S_ISDIR(st.st_mode)) {
      owned_fd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (dir) remove_own_marker(dir.get(), marker_name(kMarkerInside, rank));
    } else if (S_ISREG(st.st_mode) && foreign_link(parent).empty()) {
      owned_fd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (dir) remove_own_marker(dir.get(), marker_name(marker_prefix_beside(base), rank));
    }
  } catch (...) {  // a string that could not be made: nothing removed, as for a missing one
  }
}

}  // namespace trainctl
