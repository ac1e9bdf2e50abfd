#include "once_markers.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cassert>
#include <cerrno>
#include <cstring>
#include <exception>
#include <stdexcept>

#include "node_state.hpp"
#include "owned_fd.hpp"
#include "state_dir.hpp"

namespace trainctl {

bool claim_once(const std::string& name) {
  assert(name.compare(0, 5, "once.") == 0 && name.find('/') == std::string::npos);
  const owned_fd dir = open_state_dir();
  const owned_fd fd(openat(dir.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  const int err = errno;
  if (fd) return true;
  if (err == EEXIST) return false;
  throw std::runtime_error("cannot create " + state_dir() + "/" + name + ": " + std::strerror(err));
}

bool was_claimed(const std::string& name) {
  assert(name.compare(0, 5, "once.") == 0 && name.find('/') == std::string::npos);
  owned_fd dir;
  try {
    dir = open_state_dir();
  } catch (const std::exception&) {
    return false;  // no private directory: nothing was claimed in it
  }
  struct stat st {};
  return fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
         st.st_uid == getuid();
}

}  // namespace trainctl
