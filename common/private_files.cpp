#include "private_files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "bounded_append.hpp"
#include "owned_fd.hpp"

namespace trainctl {

bool make_private_dirs(const std::string& dir) {
  for (size_t at = 1; at != std::string::npos;) {
    at = dir.find('/', at + 1);
    const std::string part = dir.substr(0, at);
    if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
  }
  return true;
}

std::string append_private(const std::string& path, const std::string& text, std::size_t max) {
  const size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0 && !make_private_dirs(path.substr(0, slash)))
    return "cannot create " + path.substr(0, slash) + ": " + std::strerror(errno);
  const owned_fd fd(open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600));
  if (!fd) return "cannot open " + path + ": " + std::strerror(errno);
  struct stat st {};
  std::string why;
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid())
    why = path + " is not a regular file of this user";
  else if (max > 0)
    why = append_bounded(fd.get(), path, text, max);
  else if (write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    why = "cannot append to " + path + ": " + std::strerror(errno);
  return why;
}

std::string read_private(const std::string& path, std::size_t max, std::string* why, bool newest) {
  const owned_fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd) {
    if (errno != ENOENT) *why = "cannot read " + path + ": " + std::strerror(errno);
    return "";
  }
  struct stat st {};
  if (fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid()) {
    *why = path + " is not a regular file of this user; ignored";
    return "";
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  std::string text(std::min(max, size), '\0');
  const off_t from = newest && size > max ? static_cast<off_t>(size - max) : 0;
  const ssize_t got = pread(fd.get(), text.data(), text.size(), from);
  text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return text;
}

}  // namespace trainctl
