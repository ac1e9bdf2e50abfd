#include "commit_marker_io.hpp"

#include <fcntl.h>

#include <cctype>
#include <cstdio>
#include <exception>

#include "owned_fd.hpp"
#include "parse.hpp"
#include "run_id.hpp"

namespace trainctl {
namespace {

bool valid_encoded_name(std::string_view n) {
  if (n.empty() || n.size() > 3 * kMaxNameBytes) return false;
  for (std::size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    if (c == '%') {
      if (i + 2 >= n.size()) return false;
      if (!std::isxdigit(static_cast<unsigned char>(n[i + 1])) || !std::isxdigit(static_cast<unsigned char>(n[i + 2])))
        return false;
      i += 2;
    } else if (!marker_name_char(c)) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool valid_attempt(std::string_view a) {
  if (a.empty() || a.size() > 64) return false;
  for (const char c : a)
    if (!(std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-')) return false;
  return true;
}

std::string format_commit_marker(const commit_marker& m) {
  std::string text = "trainctl-commit " + std::to_string(m.version) + " step=" + std::to_string(m.step) +
                     " rank=" + std::to_string(m.rank) + " world=" + std::to_string(m.world) +
                     " run=" + (m.run.empty() ? "-" : m.run);
  if (m.version >= 2) text += " attempt=" + m.attempt + " name=" + encode_marker_name(m.name);
  return text + "\n";
}

std::optional<commit_marker> parse_commit_marker(const std::string& text) {
  if (text.empty() || text.back() != '\n') return std::nullopt;
  const auto words = split(std::string_view(text).substr(0, text.size() - 1), ' ');
  if (words.size() < 2 || words[0] != "trainctl-commit") return std::nullopt;
  commit_marker m;
  if (words[1] == "1" && words.size() == 6) {
    m.version = 1;
  } else if (words[1] != "2" || words.size() != 8) {
    return std::nullopt;
  }
  const auto number = [](std::string_view word, std::string_view key, std::int64_t hi, std::int64_t* out) {
    if (word.substr(0, key.size()) != key || !all_digits(word.substr(key.size()), 19)) return false;
    *out = parse_int(word.substr(key.size()), 0, hi);
    return true;
  };
  try {
    if (!number(words[2], "step=", kMaxStep, &m.step) || !number(words[3], "rank=", kMaxWorld - 1, &m.rank) ||
        !number(words[4], "world=", kMaxWorld, &m.world))
      return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (words[5].substr(0, 4) != "run=") return std::nullopt;
  m.run = std::string(words[5].substr(4));
  if (m.run == "-") {
    m.run.clear();
  } else if (!valid_run_id(m.run)) {
    return std::nullopt;
  }
  if (m.version == 2) {
    if (words[6].substr(0, 8) != "attempt=" || !valid_attempt(words[6].substr(8))) return std::nullopt;
    if (words[7].substr(0, 5) != "name=" || !valid_encoded_name(words[7].substr(5))) return std::nullopt;
    m.attempt = std::string(words[6].substr(8));
    m.name = std::string(words[7].substr(5));  // kept encoded: compared with encode_marker_name
  }
  if (m.world < 1 || m.rank >= m.world) return std::nullopt;
  return m;
}

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
