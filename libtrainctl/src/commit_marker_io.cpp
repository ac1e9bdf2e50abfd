#include "commit_marker_io.hpp"

#include <fcntl.h>

#include <cstdio>

#include "owned_fd.hpp"

namespace trainctl {

std::string encode_marker_name(const std::string& name) {
  std::string out;
  for (const char c : name) {
    if (marker_name_char(c)) {
      out += c;
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", static_cast<unsigned char>(c));
      out += hex;
    }
  }
  return out;
}

std::string foreign_link(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode) || st.st_uid == 0 || owned_by_me(st)) return "";
  return "a link of uid " + std::to_string(st.st_uid);
}

std::optional<commit_marker> read_marker(int dir, const std::string& name) {
  owned_fd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || !owned_by_me(st) ||
      st.st_size > static_cast<off_t>(kMaxMarkerBytes))
    return std::nullopt;
  char buf[kMaxMarkerBytes + 1];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n <= 0) return std::nullopt;
  return parse_commit_marker(std::string(buf, static_cast<std::size_t>(n)));
}

void remove_own_marker(int dir, const std::string& name) noexcept {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && owned_by_me(st))
    ::unlinkat(dir, name.c_str(), 0);
}

}  // namespace trainctl
