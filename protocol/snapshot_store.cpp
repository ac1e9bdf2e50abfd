#include "snapshot_store.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <system_error>

#include "dir_entries.hpp"

namespace trainctl {
namespace {

constexpr char kMagic[] = "trainctl-snapshot 1\n";
constexpr char kSlotInfix[] = ".snapshot.";

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (const unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

bool plain_value(const std::string& v) {
  return v.find('\n') == std::string::npos && v.find('\0') == std::string::npos;
}

// pwrite of all `n` bytes at `off`; errno on failure.
bool write_all(int fd, const void* data, std::size_t n, off_t off) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::pwrite(fd, p, n, off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      if (w == 0) errno = EIO;
      return false;
    }
    p += w;
    n -= static_cast<std::size_t>(w);
    off += w;
  }
  return true;
}

std::string dir_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

std::string base_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The slot files beside `state_path` (every rank's), by name, through the directory
// opened without following a link (dir_entries.hpp).
std::vector<std::string> slot_names(const std::string& state_path, owned_fd* dir) {
  std::vector<std::string> out;
  const std::string prefix = base_of(state_path) + kSlotInfix;
  dir->reset(::open(dir_of(state_path).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!*dir) return out;
  for (const std::string& name : dir_entry_names(dir->get()))
    if (name.compare(0, prefix.size(), prefix) == 0) out.push_back(name);
  return out;
}

}  // namespace

std::string format_snapshot_header(const snapshot_meta& m, std::uint64_t bytes) {
  std::string h = kMagic;
  h += "step=" + std::to_string(m.step) + "\nrank=" + std::to_string(m.rank) + "\nworld=" + std::to_string(m.world) +
       "\nbytes=" + std::to_string(bytes) + "\nrun=" + m.run + "\nattempt=" + m.attempt + "\ndir=" + m.ckpt_dir + "\n";
  char sum[40];
  std::snprintf(sum, sizeof sum, "sum=%016llx\n", static_cast<unsigned long long>(fnv1a(h)));
  return h + sum;
}

bool parse_snapshot_header(const std::string& text, snapshot_meta* m, std::uint64_t* bytes) {
  const std::size_t end = text.find('\0');
  const std::string h = text.substr(0, end);
  const std::size_t sum_at = h.rfind("sum=");
  if (h.compare(0, sizeof kMagic - 1, kMagic) != 0 || sum_at == std::string::npos) return false;
  char want[40];
  std::snprintf(want, sizeof want, "sum=%016llx\n", static_cast<unsigned long long>(fnv1a(h.substr(0, sum_at))));
  if (h.substr(sum_at) != want) return false;
  snapshot_meta out;
  std::int64_t size = -1;
  std::size_t at = sizeof kMagic - 1;
  while (at < sum_at) {
    const std::size_t nl = h.find('\n', at);
    const std::string line = h.substr(at, nl - at);
    at = nl + 1;
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) return false;
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    // A number for the numeric keys: -1 when it is none (every valid one is 0 or more).
    char* rest = nullptr;
    errno = 0;
    long long n = value.empty() ? -1 : std::strtoll(value.c_str(), &rest, 10);
    if (errno != 0 || rest == nullptr || *rest != '\0' || n < 0) n = -1;
    if (key == "step")
      out.step = n;
    else if (key == "rank")
      out.rank = n;
    else if (key == "world")
      out.world = n;
    else if (key == "bytes")
      size = n;
    else if (key == "run")
      out.run = value;
    else if (key == "attempt")
      out.attempt = value;
    else if (key == "dir")
      out.ckpt_dir = value;
    else
      return false;
  }
  if (out.step < 0 || out.rank < 0 || out.world <= out.rank || size < 0 || out.ckpt_dir.empty()) return false;
  *m = out;
  *bytes = static_cast<std::uint64_t>(size);
  return true;
}

std::string snapshot_slot_path(const std::string& state_path, std::int64_t rank, int slot) {
  return state_path + kSlotInfix + std::to_string(rank) + "." + std::to_string(slot);
}

snapshot_writer::snapshot_writer(std::string state_path, std::int64_t rank)
    : state_path_(std::move(state_path)), rank_(rank) {}

int snapshot_writer::open_slot(int slot) {
  if (!fds_[slot]) {
    const std::string path = snapshot_slot_path(state_path_, rank_, slot);
    fds_[slot].reset(::open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fds_[slot]) throw std::system_error(errno, std::generic_category(), "trainctl: snapshot: cannot open " + path);
  }
  return fds_[slot].get();
}

void snapshot_writer::write(const snapshot_meta& m, const void* data, std::size_t n) {
  if (!plain_value(m.run) || !plain_value(m.attempt) || !plain_value(m.ckpt_dir) || m.ckpt_dir.empty())
    throw std::invalid_argument("trainctl: snapshot: a name with a line break, or no checkpoint directory");
  const std::string header = format_snapshot_header(m, n);
  if (header.size() > kSnapshotHeaderBytes)
    throw std::invalid_argument("trainctl: snapshot: the checkpoint directory's path is too long (" +
                                std::to_string(m.ckpt_dir.size()) + " bytes); accepted: up to 3,800");
  const int slot = next_;
  const int fd = open_slot(slot);
  const std::string path = snapshot_slot_path(state_path_, rank_, slot);
  const auto fail = [&](const char* what) {
    const int err = errno;
    (void)::ftruncate(fd, 0);  // nothing half-written stays in memory
    throw std::system_error(err, std::generic_category(),
                            std::string("trainctl: snapshot of step ") + std::to_string(m.step) + ": " + what + " " +
                                path + " (" + std::to_string(n) + " bytes)");
  };
  static const char cleared[kSnapshotHeaderBytes] = {};
  if (!write_all(fd, cleared, sizeof cleared, 0)) fail("cannot clear");
  const off_t total = static_cast<off_t>(kSnapshotHeaderBytes + n);
  if (::ftruncate(fd, total) != 0) fail("cannot size");
  const int err = ::posix_fallocate(fd, 0, total);  // memory now, not a SIGBUS later
  if (err != 0 && err != EOPNOTSUPP && err != EINVAL) {
    errno = err;
    fail("no room for");
  }
  if (!write_all(fd, data, n, static_cast<off_t>(kSnapshotHeaderBytes))) fail("cannot write");
  if (!write_all(fd, header.data(), header.size(), 0)) fail("cannot finish");
  next_ = 1 - slot;
}

std::vector<snapshot_slot> whole_snapshots(const std::string& state_path) {
  std::vector<snapshot_slot> out;
  owned_fd dir;
  for (const std::string& name : slot_names(state_path, &dir)) {
    const owned_fd fd(::openat(dir.get(), name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat st {};
    if (!fd || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) continue;
    std::string header(kSnapshotHeaderBytes, '\0');
    if (::pread(fd.get(), header.data(), header.size(), 0) != static_cast<ssize_t>(header.size())) continue;
    snapshot_slot s;
    if (!parse_snapshot_header(header, &s.meta, &s.bytes)) continue;
    if (static_cast<std::uint64_t>(st.st_size) != kSnapshotHeaderBytes + s.bytes) continue;
    if (name != base_of(snapshot_slot_path(state_path, s.meta.rank, name.back() - '0'))) continue;  // its own rank
    s.path = dir_of(state_path) + "/" + name;
    out.push_back(std::move(s));
  }
  return out;
}

int remove_snapshots(const std::string& state_path) noexcept {
  int removed = 0;
  owned_fd dir;
  for (const std::string& name : slot_names(state_path, &dir)) {
    struct stat st {};
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
        st.st_uid == ::geteuid() && ::unlinkat(dir.get(), name.c_str(), 0) == 0)
      ++removed;
  }
  return removed;
}

}  // namespace trainctl
