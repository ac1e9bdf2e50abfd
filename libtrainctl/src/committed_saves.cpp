#include "committed_saves.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "owned_fd.hpp"
#include "parse.hpp"
#include "run_id.hpp"

namespace trainctl {
namespace {

constexpr const char* kMarker = ".trainctl-committed.";
constexpr std::int64_t kMaxWorld = 1 << 20;
constexpr std::int64_t kMaxStep = std::int64_t{1} << 62;
constexpr std::size_t kMaxMarkerBytes = 256;
constexpr std::size_t kMaxNameBytes = 255;  // NAME_MAX on the file systems checkpoints live on

bool own(const struct stat& st) { return st.st_uid == ::geteuid(); }

// Where the markers of checkpoint `name` in the directory `dir` live: inside it (a
// directory, opened here) or beside it (a file); `prefix` + RANK names each.
struct marker_place {
  owned_fd inside;  // the checkpoint directory, or none for a file
  std::string prefix;
  int at(int dir) const { return inside ? inside.get() : dir; }
};

// The place of the markers of `name` in `dir`, when it is a checkpoint of this user's.
std::optional<marker_place> place_of(int dir, const std::string& name) {
  struct stat st {};
  if (::fstatat(dir, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !own(st)) return std::nullopt;
  marker_place p;
  if (S_ISREG(st.st_mode)) {
    p.prefix = "." + name + kMarker;
    return p;
  }
  if (!S_ISDIR(st.st_mode)) return std::nullopt;
  p.inside.reset(::openat(dir, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!p.inside || ::fstat(p.inside.get(), &st) != 0 || !own(st)) return std::nullopt;
  p.prefix = kMarker;
  return p;
}

// The marker `name` relative to `dir` when it is a small regular file of this user's
// and says what a marker says.
std::optional<commit_marker> read_marker(int dir, const std::string& name) {
  owned_fd fd(::openat(dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  struct stat st {};
  if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || !own(st) ||
      st.st_size > static_cast<off_t>(kMaxMarkerBytes))
    return std::nullopt;
  char buf[kMaxMarkerBytes + 1];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n <= 0) return std::nullopt;
  return parse_commit_marker(std::string(buf, static_cast<std::size_t>(n)));
}

std::string marker_name(const std::string& prefix, std::int64_t rank) { return prefix + std::to_string(rank); }

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::generic_category(), what);
}

// Writes `text` as `name` in `dir` whole: a temporary name, fsync, rename over `name`
// (a link planted under `name` is replaced, never followed), then the directory synced.
void write_whole(int dir, const std::string& name, const std::string& text, const std::string& shown) {
  const std::string tmp = name + ".tmp." + std::to_string(::getpid());
  const int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC;
  owned_fd fd(::openat(dir, tmp.c_str(), flags, 0644));
  if (!fd && errno == EEXIST && ::unlinkat(dir, tmp.c_str(), 0) == 0)  // a dead process's of this pid
    fd.reset(::openat(dir, tmp.c_str(), flags, 0644));
  if (!fd) throw_errno("trainctl: saved(): cannot write " + shown);
  const bool written = ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                       ::fsync(fd.get()) == 0 && ::close(fd.release()) == 0;
  if (!written || ::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) {
    const int err = errno;
    ::unlinkat(dir, tmp.c_str(), 0);
    errno = err;
    throw_errno("trainctl: saved(): cannot write " + shown);
  }
  ::fsync(dir);  // the rename lasts; some file systems refuse a directory's fsync (EINVAL): still written
}

}  // namespace

std::string format_commit_marker(const commit_marker& m) {
  return "trainctl-commit 1 step=" + std::to_string(m.step) + " rank=" + std::to_string(m.rank) +
         " world=" + std::to_string(m.world) + " run=" + (m.run.empty() ? "-" : m.run) + "\n";
}

std::optional<commit_marker> parse_commit_marker(const std::string& text) {
  if (text.empty() || text.back() != '\n') return std::nullopt;
  const auto words = split(std::string_view(text).substr(0, text.size() - 1), ' ');
  if (words.size() != 6 || words[0] != "trainctl-commit" || words[1] != "1") return std::nullopt;
  commit_marker m;
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
  if (m.world < 1 || m.rank >= m.world) return std::nullopt;
  return m;
}

void commit_checkpoint(const std::string& given, const commit_marker& m) {
  if (m.step < 0 || m.step > kMaxStep || m.world < 1 || m.world > kMaxWorld || m.rank < 0 || m.rank >= m.world)
    throw std::invalid_argument("trainctl: saved(): step " + std::to_string(m.step) + " of rank " +
                                std::to_string(m.rank) + " in a world of " + std::to_string(m.world) +
                                "; accepted: a step of 0 or more, a rank below the world size");
  std::string path = given;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const std::string accepted =
      "; accepted: the checkpoint directory or file this rank just wrote, this user's, not a link";
  struct stat st {};
  if (path.empty() || ::lstat(path.c_str(), &st) != 0)
    throw std::invalid_argument("trainctl: saved(): '" + given + "' does not exist" + accepted);
  if (!own(st) || !(S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)))
    throw std::invalid_argument("trainctl: saved(): '" + given + "' is " +
                                (S_ISLNK(st.st_mode) ? "a link"
                                 : !own(st)          ? "another user's"
                                                     : "no directory or file") +
                                accepted);
  const std::string text = format_commit_marker(m);
  if (S_ISDIR(st.st_mode)) {
    owned_fd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir || ::fstat(dir.get(), &st) != 0 || !own(st)) throw_errno("trainctl: saved(): cannot open " + path);
    const std::string name = marker_name(kMarker, m.rank);
    write_whole(dir.get(), name, text, path + "/" + name);
    return;
  }
  const auto slash = path.rfind('/');
  const std::string parent = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = marker_name("." + path.substr(slash == std::string::npos ? 0 : slash + 1) + kMarker, m.rank);
  if (name.size() + 16 > kMaxNameBytes)  // room for the temporary name's suffix
    throw std::invalid_argument("trainctl: saved(): the name of '" + given +
                                "' is too long to mark beside it; accepted: a file name of up to 200 bytes");
  // The directory the caller named may be a link (a checkpoint directory on scratch, linked
  // from the project's); the names inside it are opened without following one.
  owned_fd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir) throw_errno("trainctl: saved(): cannot open " + parent);
  write_whole(dir.get(), name, text, parent + "/" + name);
}

std::optional<committed_checkpoint> newest_committed(const std::string& path) {
  owned_fd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));  // the caller's: may be a link, as above
  if (!dir) {
    if (errno == ENOENT) return std::nullopt;  // a fresh start
    throw_errno("trainctl: resume_path(): cannot read " + path);
  }
  owned_fd listed(::dup(dir.get()));
  std::unique_ptr<DIR, int (*)(DIR*)> entries(listed ? ::fdopendir(listed.get()) : nullptr, ::closedir);
  if (entries) listed.release();  // closedir closes it
  if (!entries) {
    throw_errno("trainctl: resume_path(): cannot read " + path);
  }
  struct candidate {
    std::string name;
    commit_marker first;  // rank 0's marker
  };
  std::vector<candidate> candidates;
  while (const dirent* e = ::readdir(entries.get())) {
    const std::string name = e->d_name;
    if (name.empty() || name[0] == '.') continue;  // markers, temporaries, . and ..
    const auto place = place_of(dir.get(), name);
    if (!place) continue;
    auto first = read_marker(place->at(dir.get()), marker_name(place->prefix, 0));
    if (first && first->rank == 0) candidates.push_back({name, *first});
  }
  std::sort(candidates.begin(), candidates.end(), [](const candidate& a, const candidate& b) {
    return a.first.step != b.first.step ? a.first.step > b.first.step : a.name > b.name;
  });
  for (const auto& c : candidates) {
    const auto place = place_of(dir.get(), c.name);
    if (!place) continue;
    bool all = true;
    for (std::int64_t r = 1; all && r < c.first.world; ++r) {
      const auto m = read_marker(place->at(dir.get()), marker_name(place->prefix, r));
      all = m && m->rank == r && m->step == c.first.step && m->world == c.first.world && m->run == c.first.run;
    }
    if (all) return committed_checkpoint{path + (path.back() == '/' ? "" : "/") + c.name, c.first.step, c.first.world};
  }
  return std::nullopt;
}

}  // namespace trainctl
