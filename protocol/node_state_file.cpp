#include "node_state_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <new>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "beat_fields.hpp"
#include "deadline_fields.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "notice_fields.hpp"
#include "publisher_fields.hpp"
#include "sigbus_guard.hpp"
#include "state_dir.hpp"
#include "switch_fields.hpp"

namespace trainctl {

using state_dir_detail::open_private_dir;
using state_dir_detail::sys_error;
using state_dir_detail::untrusted;

namespace {

// Creates a fully initialised state file under a temporary name and links it into
// place, so that a file found under `name` is never half-written.
void create_state_file(int dir_fd, const std::string& dir, const std::string& name) {
  const std::string tmp = name + ".new." + std::to_string(getpid());
  owned_fd fd(openat(dir_fd, tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) throw sys_error("cannot create node state " + dir + "/" + tmp);
  node_state header{};
  init_header(header);
  const bool written = write(fd.get(), &header, sizeof header) == static_cast<ssize_t>(sizeof header);
  const int saved = errno;
  fd.reset();
  if (!written) {
    unlinkat(dir_fd, tmp.c_str(), 0);
    errno = saved;
    throw sys_error("cannot write node state " + dir + "/" + tmp);
  }
  const int linked = linkat(dir_fd, tmp.c_str(), dir_fd, name.c_str(), 0);
  const int link_errno = errno;
  unlinkat(dir_fd, tmp.c_str(), 0);
  if (linked != 0 && link_errno != EEXIST) {
    errno = link_errno;
    throw sys_error("cannot create node state " + dir + "/" + name);
  }
}

// What a file of the wrong size or format is, from its magic and layout (the first 12
// bytes, where every layout keeps them): another trainctl's layout is named as such.
std::string foreign_layout(std::uint64_t magic, std::uint32_t layout, const char* otherwise) {
  if (magic != node_state::kMagic || layout == node_state::kVersion) return otherwise;
  return "is of node-state layout " + std::to_string(layout) + ", which this build (layout " +
         std::to_string(node_state::kVersion) + ") cannot read: another trainctl version made it";
}
std::string foreign_format(int fd, const char* otherwise) {
  unsigned char head[12] = {};
  if (pread(fd, head, sizeof head, 0) != static_cast<ssize_t>(sizeof head)) return otherwise;
  std::uint64_t magic = 0;
  std::uint32_t layout = 0;
  std::memcpy(&magic, head, sizeof magic);
  std::memcpy(&layout, head + sizeof magic, sizeof layout);
  return foreign_layout(magic, layout, otherwise);
}
std::string foreign_format_of(const node_state& ns) {
  return foreign_layout(ns.magic, ns.version, "has another format (another trainctl version?)");
}

bool process_alive(std::int32_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH); }

std::atomic<std::uint32_t> g_publisher_serial{0};

}  // namespace

std::unique_ptr<node_state> read_node_state(const std::string& path, std::string* why) {
  // O_NONBLOCK: a FIFO planted under the name does not stall the reader.
  owned_fd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    *why = "node state " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  struct stat st {};
  std::string problem = fstat(fd.get(), &st) != 0 ? std::strerror(errno) : untrusted(st, false);
  if (problem.empty() && static_cast<size_t>(st.st_size) != sizeof(node_state))
    problem = foreign_format(fd.get(), "has the wrong size");
  auto copy = std::make_unique<node_state>();
  if (problem.empty() && pread(fd.get(), copy.get(), sizeof(node_state), 0) != static_cast<ssize_t>(sizeof(node_state)))
    problem = "could not be read whole";
  fd.reset();
  if (problem.empty() &&
      (copy->magic != node_state::kMagic || copy->version != node_state::kVersion || copy->size != sizeof(node_state)))
    problem = foreign_format_of(*copy);
  if (problem.empty()) return copy;
  *why = "node state " + path + " " + problem;
  return nullptr;
}

node_state_file::node_state_file(const std::string& path) : path_(path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  name_ = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name_.empty()) throw std::runtime_error("node state " + path + " names no file");
  dir_fd_ = open_private_dir(dir);
  open_file();  // a throw closes dir_fd_ (a member, destroyed)
}

void node_state_file::open_file() {
  // A sweep of stale files (sweep_stale_state) may unlink the name between this open
  // and the shared lock: then the descriptor no longer is the file under the name, and
  // the open starts again.
  for (int attempt = 0;; ++attempt) {
    fd_.reset(openat(dir_fd_.get(), name_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    if (!fd_ && errno == ENOENT && attempt == 0) {
      fd_ = open_supervisors_copy();
      adopted_ = static_cast<bool>(fd_);
    }
    if (!fd_ && errno == ENOENT) {
      create_state_file(dir_fd_.get(), path_.substr(0, path_.size() - name_.size()), name_);
      fd_.reset(openat(dir_fd_.get(), name_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
    }
    if (!fd_) throw sys_error("cannot open node state " + path_);
    struct stat st {};
    std::string why = fstat(fd_.get(), &st) != 0 ? std::strerror(errno) : untrusted(st, false);
    if (why.empty() && static_cast<size_t>(st.st_size) != sizeof(node_state)) {
      const std::string foreign = foreign_format(fd_.get(), "");
      if (!foreign.empty()) {
        fd_.reset();
        throw std::runtime_error("node state " + path_ + " " + foreign);
      }
      why = "has the wrong size";
    }
    if (!why.empty()) {
      fd_.reset();
      throw std::runtime_error("node state " + path_ + " " + why + ": not a trainctl state file of this user");
    }
    void* map = mmap(nullptr, sizeof(node_state), PROT_READ | PROT_WRITE, MAP_SHARED, fd_.get(), 0);
    if (map == MAP_FAILED) {
      const int saved = errno;
      fd_.reset();
      errno = saved;
      throw sys_error("cannot map node state " + path_);
    }
    state_ = static_cast<node_state*>(map);
    guard_ = guard_mapping(map, fd_.get());
    if (state_->magic != node_state::kMagic || state_->version != node_state::kVersion ||
        state_->size != sizeof(node_state)) {
      const std::string what = foreign_format_of(*state_);
      unguard_mapping(guard_);
      guard_ = -1;
      munmap(map, sizeof(node_state));
      state_ = nullptr;
      fd_.reset();
      throw std::runtime_error("node state " + path_ + " " + what);
    }
    // Every process keeps a shared lock while it has the state open; unlink_if_last
    // removes the file only when it can take the lock exclusively. A file nobody has
    // open is left over from a killed step (job ids repeat after a controller restart):
    // its flags are not this step's, so start from a clean state.
    if (flock(fd_.get(), LOCK_EX | LOCK_NB) == 0) {
      std::memset(reinterpret_cast<char*>(state_) + offsetof(node_state, flags), 0,
                  sizeof(node_state) - offsetof(node_state, flags));
    }
    flock(fd_.get(), LOCK_SH);
    struct stat now {};
    if (adopted_ || attempt >= 3 ||
        (fstatat(dir_fd_.get(), name_.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == st.st_ino &&
         now.st_dev == st.st_dev))
      return;
    unguard_mapping(guard_);
    guard_ = -1;
    munmap(state_, sizeof(node_state));
    state_ = nullptr;
    fd_.reset();
  }
}

node_state_file::~node_state_file() {
  release_publisher();
  unguard_mapping(guard_);
  if (state_ != nullptr) munmap(state_, sizeof(node_state));
}

bool node_state_file::try_become_publisher(std::string* problem, std::int64_t stale_ms, int* taken_from) {
  node_state& ns = *state_;
  if (is_publisher()) return true;
  if (!lock_fd_) {
    const std::string lock_name = name_ + ".lock";
    owned_fd fd(openat(dir_fd_.get(), lock_name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) {
      // A removed state's directory is gone too: the lock went with it, and the role
      // passes by its heartbeat alone (no line: the removal was said once).
      if (problem != nullptr && !(errno == ENOENT && removed()))
        *problem = "cannot open the publisher lock " + path_ + ".lock: " + std::strerror(errno);
    } else {
      struct stat st {};
      const std::string why = fstat(fd.get(), &st) != 0 ? std::strerror(errno) : untrusted(st, false);
      if (!why.empty()) {
        if (problem != nullptr) *problem = "publisher lock " + path_ + ".lock " + why + ": not using it";
      } else if (flock(fd.get(), LOCK_EX | LOCK_NB) == 0) {
        lock_fd_ = std::move(fd);
      }
    }
  }
  // The lock elects the first holder; the role itself is the id in the state, which a
  // process takes from a holder that is gone or stopped looking (then without the lock,
  // which a stopped holder still has).
  const std::uint64_t current = publisher_fields::holder(ns);
  const bool free_for_lock_holder = lock_fd_ && (current == 0 || !process_alive(publisher_fields::holder_pid(current)));
  const bool stale = current != 0 && publisher_stale(ns, unix_now_ms(), stale_ms);
  if (!free_for_lock_holder && !stale) return false;
  if (my_id_ == 0) my_id_ = (static_cast<std::uint64_t>(getpid()) << 32) | (g_publisher_serial.fetch_add(1) + 1);
  if (!publisher_fields::take(ns, current, my_id_, unix_now_ms())) return false;
  if (taken_from != nullptr) *taken_from = stale ? static_cast<int>(current >> 32) : 0;
  return true;
}

bool node_state_file::is_publisher() const { return my_id_ != 0 && publisher_fields::holder(*state_) == my_id_; }

void node_state_file::release_publisher() {
  if (my_id_ != 0) publisher_fields::give_back(*state_, my_id_);
  lock_fd_.reset();  // closing drops the flock
}

// tests/e2e/test_state_faults.sh writes junk past the header, from this offset.
static_assert(offsetof(node_state, slots) == 120, "the node state's header changed size: update the test");

namespace {

// What no publisher or rank writes: a value out of its field's range, a slot that is
// half a claim, text without its end. Junk past an intact header (random bytes over the
// slots) fails one of these with certainty for all practical purposes: 16 switch slots
// whose state must be 0, 1 or 2, 64 beats whose phase and exit mark are small numbers.
std::string bad_field(const node_state& ns) {
  if (!deadline_fields::sane(ns) || !publisher_fields::sane(ns)) return "a header field out of range";
  std::string bad = switch_fields::bad(ns);
  if (bad.empty()) bad = beat_fields::bad(ns);
  return bad;
}

}  // namespace

std::string node_state_file::damage() const {
  std::string what;
  struct stat st {};
  if (guard_ >= 0 && guard_faulted(guard_))
    what = "was truncated (reading it faulted)";
  else if (fstat(fd_.get(), &st) == 0 && static_cast<size_t>(st.st_size) != sizeof(node_state))
    what = "changed size to " + std::to_string(st.st_size) + " bytes (" + std::to_string(sizeof(node_state)) +
           " expected)";
  else if (__atomic_load_n(&state_->magic, __ATOMIC_RELAXED) != node_state::kMagic ||
           state_->version != node_state::kVersion || state_->size != sizeof(node_state))
    what = "was overwritten (no trainctl header)";
  else if (!notice_fields::sane(*state_))
    what = "was overwritten (unknown flag bits)";
  else if (const std::string field = bad_field(*state_); !field.empty())
    what = "was overwritten past its header (" + field + ")";
  return what.empty() ? "" : "node state " + path_ + " " + what;
}

int node_state_file::register_switch(switch_kind kind, const std::string& name, const std::string& path) {
  return switch_fields::claim(*state_, kind, name, path);
}

owned_fd node_state_file::open_supervisors_copy() const {
  const std::string state = env_text(env_var::kTrainctlState), pid = env_text(env_var::kTrainctlSupervisorPid),
                    fd = env_text(env_var::kTrainctlStateFd);
  const auto number = [](const std::string& v) {
    return !v.empty() && v.size() <= 9 && v.find_first_not_of("0123456789") == std::string::npos;
  };
  if (state.empty() || path_ != state || !number(pid) || !number(fd)) {
    errno = ENOENT;
    return owned_fd();
  }
  // A magic link under /proc, followed on purpose (O_NOFOLLOW would refuse it): no
  // shared directory is on the way, and what it reaches must be this user's removed node
  // state (no name left: nothing anyone could have swapped in).
  const std::string link = std::string("/proc/") + pid + "/fd/" + fd;
  owned_fd copy(open(link.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK));
  struct stat st {};
  if (copy && fstat(copy.get(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() && st.st_nlink == 0 &&
      static_cast<size_t>(st.st_size) == sizeof(node_state))
    return copy;
  copy.reset();
  errno = ENOENT;
  return owned_fd();
}

bool node_state_file::removed() const {
  struct stat st {};
  return fd_ && fstat(fd_.get(), &st) == 0 && st.st_nlink == 0;
}

void node_state_file::unlink_if_last() {
  if (!fd_) return;
  // A removed state's name is gone, or names a file made since: never this one's to unlink.
  struct stat mine {
  }, named{};
  if (fstat(fd_.get(), &mine) != 0 || mine.st_nlink == 0 ||
      fstatat(dir_fd_.get(), name_.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0 || named.st_ino != mine.st_ino ||
      named.st_dev != mine.st_dev)
    return;
  if (flock(fd_.get(), LOCK_EX | LOCK_NB) == 0) {
    unlinkat(dir_fd_.get(), name_.c_str(), 0);
    unlinkat(dir_fd_.get(), (name_ + ".lock").c_str(), 0);
    flock(fd_.get(), LOCK_SH);
  }
}

}  // namespace trainctl
