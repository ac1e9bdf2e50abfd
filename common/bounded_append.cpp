#include "bounded_append.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "dir_entries.hpp"
#include "owned_fd.hpp"

namespace trainctl {
namespace {

constexpr int kLockRetryMs = 10;

bool lock_briefly(int fd, int wait_ms) {
  for (int waited = 0;; waited += kLockRetryMs) {
    if (flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
    if ((errno != EWOULDBLOCK && errno != EINTR) || waited >= wait_ms) return false;
    usleep(kLockRetryMs * 1000);
  }
}

// The newest lines of the file, at most keep bytes, written over its start; then cut.
// A second descriptor without O_APPEND (pwrite on an O_APPEND one appends on Linux),
// opened by name and checked to be the same file.
void trim(int fd, const std::string& path, std::size_t keep) {
  struct stat st {
  }, again{};
  if (fstat(fd, &st) != 0 || static_cast<std::size_t>(st.st_size) <= keep) return;
  const owned_fd rw(open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!rw || fstat(rw.get(), &again) != 0 || again.st_ino != st.st_ino || again.st_dev != st.st_dev) return;
  // The byte before the kept part too: a '\n' there means it starts with a whole line.
  std::string tail(keep + 1, '\0');
  const ssize_t got = pread(rw.get(), tail.data(), keep + 1, st.st_size - static_cast<off_t>(keep) - 1);
  if (got != static_cast<ssize_t>(keep + 1)) return;
  const std::size_t first = tail.find('\n');
  if (first == std::string::npos || first + 1 == tail.size()) return;
  tail.erase(0, first + 1);  // from the first whole line
  if (pwrite(rw.get(), tail.data(), tail.size(), 0) != static_cast<ssize_t>(tail.size())) return;
  if (ftruncate(rw.get(), static_cast<off_t>(tail.size())) != 0) return;
}

}  // namespace

std::string append_bounded(int fd, const std::string& path, const std::string& text, std::size_t max,
                           int lock_wait_ms) {
  const bool locked = lock_briefly(fd, lock_wait_ms);
  std::string why;
  if (write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    why = "cannot append to " + path + ": " + std::strerror(errno);
  else if (struct stat st{}; locked && fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) > max)
    trim(fd, path, std::max(max / 2, text.size()));  // never the lines just written
  if (locked) flock(fd, LOCK_UN);
  return why;
}

int sweep_old_files(const std::string& dir, long max_age_s) {
  const owned_fd dfd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!dfd) return 0;
  const std::time_t now = std::time(nullptr);
  int removed = 0;
  for (const std::string& name : dir_entry_names(dfd.get())) {
    if (name.empty() || name.size() > 20 || name.find_first_not_of("0123456789") != std::string::npos) continue;
    struct stat st {};
    if (fstatat(dfd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
        st.st_uid != getuid() || now - st.st_mtime < max_age_s)
      continue;
    if (unlinkat(dfd.get(), name.c_str(), 0) == 0) ++removed;
  }
  return removed;
}

}  // namespace trainctl
