#include "node_state.hpp"

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

namespace trainctl {
namespace {

std::system_error sys_error(const std::string& what) { return std::system_error(errno, std::generic_category(), what); }

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

std::string user_name(uid_t uid) {
  passwd pw{};
  passwd* found = nullptr;
  char buf[1024];
  std::string id = "uid " + std::to_string(uid);
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found != nullptr)
    return std::string(pw.pw_name) + " (" + id + ")";
  return id;
}

// What is wrong with a file or directory another user could have planted; "" if nothing.
std::string untrusted(const struct stat& st, bool dir) {
  if (st.st_uid != getuid()) return "belongs to " + user_name(st.st_uid) + ", not to " + user_name(getuid());
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
int open_private_dir(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw sys_error("cannot create node state directory " + dir);
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP || errno == ENOTDIR)
      throw std::runtime_error("node state directory " + dir + " is a symlink or not a directory: refusing it");
    throw sys_error("cannot open node state directory " + dir);
  }
  struct stat st {};
  const std::string why = fstat(fd, &st) != 0 ? std::strerror(errno) : untrusted(st, true);
  if (!why.empty()) {
    close(fd);
    throw std::runtime_error("node state directory " + dir + " " + why +
                             ": refusing it (another user may have made it; remove it, or set TRAINCTL_STATE)");
  }
  return fd;
}

// Creates a fully initialised state file under a temporary name and links it into
// place, so that a file found under `name` is never half-written.
void create_state_file(int dir_fd, const std::string& dir, const std::string& name) {
  const std::string tmp = name + ".new." + std::to_string(getpid());
  const int fd = openat(dir_fd, tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw sys_error("cannot create node state " + dir + "/" + tmp);
  node_state header{};
  init_header(header);
  const bool written = write(fd, &header, sizeof header) == static_cast<ssize_t>(sizeof header);
  const int saved = errno;
  close(fd);
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

// The SIGBUS guard. A mapped file that someone truncates (`> file`, a cleanup of
// /dev/shm) raises SIGBUS at the next read of its pages, in every process that maps
// it: the ranks and their supervisor would die at once, and the death would look like
// a bad node. The handler replaces a faulting node-state mapping with zero pages of
// its own and returns, so the read retries and sees an invalid state (magic 0), which
// the watcher then reports.
// A handler installed later (Python's faulthandler.enable() in a training script) runs
// first; rearm_sigbus_guard, at each watcher wake, puts this one first again with the
// other behind it. Until then the other handler sees the fault first: faulthandler
// prints its traceback and raises SIGBUS again, which reaches this handler without the
// fault's address: a node state whose file is now shorter than its mapping is made
// zero pages then, so the retried read passes as well.
// A fault anywhere else goes to the handler that was there before, as if this one had
// never been installed: its disposition is put back and the access retried. A SIGBUS
// sent to the process (kill, raise) has its default action (a raise by a handler behind
// this one could otherwise come back to that handler for ever), unless it was ignored.
// Runs in a signal handler, any thread: only atomics and async-signal-safe calls.
constexpr int kGuardSlots = 32;
std::atomic<void*> g_guard_start[kGuardSlots];
std::atomic<int> g_guard_fd[kGuardSlots];  // the mapped file's descriptor + 1 (0: none yet)
std::atomic<int> g_guard_faults[kGuardSlots];
struct sigaction g_previous_bus {};
std::mutex g_guard_mu;  // installs and re-arms; never taken in the handler
bool g_guard_installed = false;

// The slot stays claimed (its owner's damage() reads the count, its destructor frees it).
bool remap_slot(int i, void* start) {
  void* again = mmap(start, sizeof(node_state), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  if (again == MAP_FAILED) return false;
  g_guard_faults[i].fetch_add(1, std::memory_order_release);
  return true;
}

void on_sigbus(int /*sig*/, siginfo_t* info, void* /*uctx*/) {
  const bool fault = info->si_code > 0;  // raised by the hardware, not sent
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  bool remapped = false;
  for (int i = 0; i < kGuardSlots; ++i) {
    void* start = g_guard_start[i].load(std::memory_order_acquire);
    const auto first = reinterpret_cast<std::uintptr_t>(start);
    if (start == nullptr) continue;
    if (fault) {
      if (addr >= first && addr < first + sizeof(node_state) && remap_slot(i, start)) return;
      continue;
    }
    struct stat st {};
    const int fd = g_guard_fd[i].load(std::memory_order_acquire) - 1;
    if (fd >= 0 && g_guard_faults[i].load(std::memory_order_acquire) == 0 && fstat(fd, &st) == 0 &&
        static_cast<size_t>(st.st_size) < sizeof(node_state))
      remapped = remap_slot(i, start) || remapped;
  }
  if (remapped) return;  // a handler behind this one raised it again: the retry now passes
  if (fault) {
    sigaction(SIGBUS, &g_previous_bus, nullptr);
    return;
  }
  if (g_previous_bus.sa_handler == SIG_IGN && (g_previous_bus.sa_flags & SA_SIGINFO) == 0) return;
  signal(SIGBUS, SIG_DFL);
  raise(SIGBUS);  // blocked in this handler: delivered, with the default action, on return
}

bool guard_is_first() {
  struct sigaction now {};
  sigaction(SIGBUS, nullptr, &now);
  return (now.sa_flags & SA_SIGINFO) != 0 && now.sa_sigaction == on_sigbus;
}

void install_guard() {
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  struct sigaction before {};
  sigaction(SIGBUS, &sa, &before);
  g_previous_bus = before;
}

int guard_mapping(void* map, int fd) {
  {
    std::lock_guard<std::mutex> lock(g_guard_mu);
    if (!g_guard_installed) {
      install_guard();
      g_guard_installed = true;
    }
  }
  for (int i = 0; i < kGuardSlots; ++i) {
    void* free = nullptr;
    if (g_guard_start[i].compare_exchange_strong(free, map)) {
      g_guard_faults[i].store(0, std::memory_order_release);
      g_guard_fd[i].store(fd + 1, std::memory_order_release);
      return i;
    }
  }
  return -1;  // more than 32 states in one process: unguarded, as before
}

void unguard_mapping(int slot) {
  if (slot < 0) return;
  g_guard_fd[slot].store(0, std::memory_order_release);
  g_guard_start[slot].store(nullptr, std::memory_order_release);
}

}  // namespace

bool rearm_sigbus_guard() {
  std::lock_guard<std::mutex> lock(g_guard_mu);
  if (!g_guard_installed || guard_is_first()) return false;
  install_guard();  // the handler that took its place runs behind it now
  return true;
}

namespace {

bool process_alive(std::int32_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH); }

std::atomic<std::uint32_t> g_publisher_serial{0};

}  // namespace

constexpr std::int64_t kOnceKeepS = std::int64_t{7} * 24 * 3600;

std::int64_t unix_now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

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
  const int fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return found;
  DIR* d = fdopendir(fd);
  if (d == nullptr) {
    close(fd);
    return found;
  }
  while (const dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.size() != prefix.size() + 6 || name.compare(0, prefix.size(), prefix) != 0) continue;
    struct stat st {};
    if (fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid() &&
        (st.st_mode & 07777) == 0700)
      found.push_back(name);
  }
  closedir(d);
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

// /run/trainctl/<uid> (already checked as `st`), held with a shared lock for the rest of
// this process, as the plugin's tasks hold it: the plugin's job epilog removes it only
// when it can lock it alone, so not while this process uses it, with or without the
// plugin in this job. An epilog sweeping it holds it for milliseconds: wait up to 2 s.
// False when it went meanwhile (the caller uses another place).
bool hold_run_dir(const std::string& dir, const struct stat& st) {
  static std::mutex mu;
  static std::string held_path;
  static int held_fd = -1;
  std::lock_guard<std::mutex> lock(mu);
  if (held_fd >= 0 && held_path == dir) return true;
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  struct stat opened {};
  if (fd < 0 || fstat(fd, &opened) != 0 || opened.st_ino != st.st_ino || opened.st_dev != st.st_dev) {
    if (fd >= 0) close(fd);
    return false;
  }
  bool held = false;
  for (int i = 0; i < 200 && !(held = flock(fd, LOCK_SH | LOCK_NB) == 0); ++i) usleep(10000);
  struct stat now {};
  if (!held || lstat(dir.c_str(), &now) != 0 || now.st_ino != st.st_ino || now.st_dev != st.st_dev) {
    close(fd);
    return false;
  }
  if (held_fd >= 0) close(held_fd);
  held_fd = fd;
  held_path = dir;
  return true;
}
}  // namespace

std::string state_dir(std::string* note) {
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  struct stat st {};
  // A login node's XDG_RUNTIME_DIR often reaches a compute node where it does not exist.
  if (xdg != nullptr && xdg[0] == '/' && lstat(xdg, &st) == 0 && untrusted(st, true).empty())
    return std::string(xdg) + "/trainctl";
  const std::string uid = std::to_string(getuid());
  // Made by the SPANK plugin as root before the task starts, under a root-owned parent
  // (as logind makes /run/user/<uid>): nobody else can take the name first.
  std::string run = std::string(env_or("TRAINCTL_RUN_DIR", "/run/trainctl")) + "/" + uid;
  std::string why;
  if (lstat(run.c_str(), &st) == 0 && !S_ISLNK(st.st_mode) && untrusted(st, true).empty() && hold_run_dir(run, st))
    return run;
  // Without the plugin, /dev/shm: everyone's. A name another user took first is not
  // fought over, nor is a next name anyone could guess too: this user's own directory
  // with a random name (private_shm_dir).
  const std::string shm_root = env_or("TRAINCTL_SHM_DIR", "/dev/shm");
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
  const char* job = std::getenv("SLURM_JOB_ID");
  if (job != nullptr && *job != '\0') {
    // The node name too: several slurmd may share one host (multiple-slurmd, the
    // local test cluster), and each node has its own state.
    key = std::string(job) + "." + env_or("SLURM_STEP_ID", "batch") + "-" + env_or("SLURMD_NODENAME", "node");
  } else if (std::getenv("LOCAL_RANK") != nullptr) {
    // torchrun's workers are children of one agent: its pid names the run on this node.
    key = "ppid" + std::to_string(getppid());
  } else {
    key = "pid" + std::to_string(getpid());
  }
  return state_dir() + "/" + key;
}

std::unique_ptr<node_state> read_node_state(const std::string& path, std::string* why) {
  // O_NONBLOCK: a FIFO planted under the name does not stall the reader.
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *why = "node state " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  struct stat st {};
  std::string problem = fstat(fd, &st) != 0 ? std::strerror(errno) : untrusted(st, false);
  if (problem.empty() && static_cast<size_t>(st.st_size) != sizeof(node_state)) problem = "has the wrong size";
  auto copy = std::make_unique<node_state>();
  if (problem.empty() && pread(fd, copy.get(), sizeof(node_state), 0) != static_cast<ssize_t>(sizeof(node_state)))
    problem = "could not be read whole";
  close(fd);
  if (problem.empty() &&
      (copy->magic != node_state::kMagic || copy->version != node_state::kVersion || copy->size != sizeof(node_state)))
    problem = "has another format (another trainctl version?)";
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
  try {
    open_file();
  } catch (...) {
    close(dir_fd_);
    throw;
  }
}

void node_state_file::open_file() {
  // A sweep of stale files (sweep_stale_state) may unlink the name between this open
  // and the shared lock: then the descriptor no longer is the file under the name, and
  // the open starts again.
  for (int attempt = 0;; ++attempt) {
    fd_ = openat(dir_fd_, name_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (fd_ < 0 && errno == ENOENT && attempt == 0) {
      fd_ = open_supervisors_copy();
      adopted_ = fd_ >= 0;
    }
    if (fd_ < 0 && errno == ENOENT) {
      create_state_file(dir_fd_, path_.substr(0, path_.size() - name_.size()), name_);
      fd_ = openat(dir_fd_, name_.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    }
    if (fd_ < 0) throw sys_error("cannot open node state " + path_);
    struct stat st {};
    std::string why = fstat(fd_, &st) != 0 ? std::strerror(errno) : untrusted(st, false);
    if (why.empty() && static_cast<size_t>(st.st_size) != sizeof(node_state)) why = "has the wrong size";
    if (!why.empty()) {
      close(fd_);
      fd_ = -1;
      throw std::runtime_error("node state " + path_ + " " + why + ": not a trainctl state file of this user");
    }
    void* map = mmap(nullptr, sizeof(node_state), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
    if (map == MAP_FAILED) {
      const int saved = errno;
      close(fd_);
      fd_ = -1;
      errno = saved;
      throw sys_error("cannot map node state " + path_);
    }
    state_ = static_cast<node_state*>(map);
    guard_ = guard_mapping(map, fd_);
    if (state_->magic != node_state::kMagic || state_->version != node_state::kVersion ||
        state_->size != sizeof(node_state)) {
      unguard_mapping(guard_);
      guard_ = -1;
      munmap(map, sizeof(node_state));
      state_ = nullptr;
      close(fd_);
      fd_ = -1;
      throw std::runtime_error("node state " + path_ + " has another format (another trainctl version?)");
    }
    // Every process keeps a shared lock while it has the state open; unlink_if_last
    // removes the file only when it can take the lock exclusively. A file nobody has
    // open is left over from a killed step (job ids repeat after a controller restart):
    // its flags are not this step's, so start from a clean state.
    if (flock(fd_, LOCK_EX | LOCK_NB) == 0) {
      std::memset(reinterpret_cast<char*>(state_) + offsetof(node_state, flags), 0,
                  sizeof(node_state) - offsetof(node_state, flags));
    }
    flock(fd_, LOCK_SH);
    struct stat now {};
    if (adopted_ || attempt >= 3 ||
        (fstatat(dir_fd_, name_.c_str(), &now, AT_SYMLINK_NOFOLLOW) == 0 && now.st_ino == st.st_ino &&
         now.st_dev == st.st_dev))
      return;
    unguard_mapping(guard_);
    guard_ = -1;
    munmap(state_, sizeof(node_state));
    state_ = nullptr;
    close(fd_);
    fd_ = -1;
  }
}

node_state_file::~node_state_file() {
  release_publisher();
  unguard_mapping(guard_);
  if (state_ != nullptr) munmap(state_, sizeof(node_state));
  if (fd_ >= 0) close(fd_);
  if (dir_fd_ >= 0) close(dir_fd_);
}

bool node_state_file::try_become_publisher(std::string* problem, std::int64_t stale_ms, int* taken_from) {
  node_state& ns = *state_;
  if (is_publisher()) return true;
  if (lock_fd_ < 0) {
    const std::string lock_name = name_ + ".lock";
    const int fd = openat(dir_fd_, lock_name.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
      // A removed state's directory is gone too: the lock went with it, and the role
      // passes by its heartbeat alone (no line: the removal was said once).
      if (problem != nullptr && !(errno == ENOENT && removed()))
        *problem = "cannot open the publisher lock " + path_ + ".lock: " + std::strerror(errno);
    } else {
      struct stat st {};
      const std::string why = fstat(fd, &st) != 0 ? std::strerror(errno) : untrusted(st, false);
      if (!why.empty()) {
        close(fd);
        if (problem != nullptr) *problem = "publisher lock " + path_ + ".lock " + why + ": not using it";
      } else if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
      } else {
        lock_fd_ = fd;
      }
    }
  }
  // The lock elects the first holder; the role itself is the id in the state, which a
  // process takes from a holder that is gone or stopped looking (then without the lock,
  // which a stopped holder still has).
  std::uint64_t current = ns.publisher_id.load(std::memory_order_acquire);
  const bool free_for_lock_holder =
      lock_fd_ >= 0 && (current == 0 || !process_alive(static_cast<std::int32_t>(current >> 32)));
  const bool stale = current != 0 && publisher_stale(ns, unix_now_ms(), stale_ms);
  if (!free_for_lock_holder && !stale) return false;
  if (my_id_ == 0) my_id_ = (static_cast<std::uint64_t>(getpid()) << 32) | (g_publisher_serial.fetch_add(1) + 1);
  if (!ns.publisher_id.compare_exchange_strong(current, my_id_, std::memory_order_acq_rel)) return false;
  ns.published_ms.store(unix_now_ms(), std::memory_order_release);
  ns.supervised.store(0, std::memory_order_relaxed);  // a supervisor says so itself
  if (taken_from != nullptr) *taken_from = stale ? static_cast<int>(current >> 32) : 0;
  return true;
}

bool node_state_file::is_publisher() const {
  return my_id_ != 0 && state_->publisher_id.load(std::memory_order_acquire) == my_id_;
}

void node_state_file::release_publisher() {
  if (is_publisher()) {
    state_->supervised.store(0, std::memory_order_relaxed);
    std::uint64_t mine = my_id_;
    state_->publisher_id.compare_exchange_strong(mine, 0, std::memory_order_acq_rel);
  }
  if (lock_fd_ >= 0) close(lock_fd_);  // closing drops the flock
  lock_fd_ = -1;
}

// tests/e2e/test_state_faults.sh writes junk past the header, from this offset.
static_assert(offsetof(node_state, slots) == 120, "the node state's header changed size: update the test");

namespace {

bool terminated(const char* text, std::size_t size) { return std::memchr(text, '\0', size) != nullptr; }

// What no publisher or rank writes: a value out of its field's range, a slot that is
// half a claim, text without its end. Junk past an intact header (random bytes over the
// slots) fails one of these with certainty for all practical purposes: 16 switch slots
// whose state must be 0, 1 or 2, 64 beats whose phase and exit mark are small numbers.
std::string bad_field(const node_state& ns) {
  if (ns.deadline_ms.load() < 0 || ns.save_max.load() < 0 || ns.supervised.load() < 0 || ns.supervised.load() > 1 ||
      ns.publish_every_ms.load() < 0 || ns.longest_save_ms.load() < 0 || ns.longest_quiet_ms.load() < 0)
    return "a header field out of range";
  for (const switch_slot& s : ns.slots) {
    const std::uint32_t st = s.state.load(std::memory_order_acquire);
    if (st > 2) return "a switch slot's state";
    if (st == 0 && (s.kind != 0 || s.token.load() != 0 || s.count.load() != 0 || s.name[0] != 0 || s.path[0] != 0))
      return "a free switch slot that holds data";
    if (st == 2 && ((s.kind != static_cast<std::uint32_t>(switch_kind::exit) &&
                     s.kind != static_cast<std::uint32_t>(switch_kind::save)) ||
                    s.token.load() < 0 || s.count.load() < 0 || !terminated(s.name, sizeof s.name) ||
                    !terminated(s.path, sizeof s.path)))
      return "a switch slot's fields";
  }
  for (const rank_beat& b : ns.beats) {
    const std::int32_t phase = b.phase.load();
    if (b.pid.load() < 0 || b.rank.load() < -1 || b.beat_ms.load() < 0 || b.step_us.load() < 0 || b.slow.load() < 0 ||
        b.exiting.load() < 0 || b.exiting.load() > 1 || phase < 0 || phase > kPhaseNamed + kMaxPhases ||
        b.work_marked.load() < 0 || b.work_marked.load() > 1 || b.phase_ms.load() < 0 || b.timed_steps.load() < 0 ||
        b.work_total_us.load() < 0 || b.slowest_total_us.load() < 0)
      return "a heartbeat slot's fields";
  }
  for (const phase_slot& p : ns.phases) {
    const std::uint32_t st = p.state.load(std::memory_order_acquire);
    if (st > 2 || p.reserved != 0 || p.longest_ms.load() < 0 ||
        (st == 0 && (p.name[0] != 0 || p.longest_ms.load() != 0)) || (st == 2 && !terminated(p.name, sizeof p.name)))
      return "a phase slot's fields";
  }
  return "";
}

}  // namespace

std::string node_state_file::damage() const {
  std::string what;
  struct stat st {};
  if (guard_ >= 0 && g_guard_faults[guard_].load(std::memory_order_acquire) != 0)
    what = "was truncated (reading it faulted)";
  else if (fstat(fd_, &st) == 0 && static_cast<size_t>(st.st_size) != sizeof(node_state))
    what = "changed size to " + std::to_string(st.st_size) + " bytes (" + std::to_string(sizeof(node_state)) +
           " expected)";
  else if (__atomic_load_n(&state_->magic, __ATOMIC_RELAXED) != node_state::kMagic ||
           state_->version != node_state::kVersion || state_->size != sizeof(node_state))
    what = "was overwritten (no trainctl header)";
  else if ((state_->flags.load(std::memory_order_relaxed) & ~kKnownFlags) != 0)
    what = "was overwritten (unknown flag bits)";
  else if (const std::string field = bad_field(*state_); !field.empty())
    what = "was overwritten past its header (" + field + ")";
  return what.empty() ? "" : "node state " + path_ + " " + what;
}

void init_header(node_state& ns) {
  ns.magic = node_state::kMagic;
  ns.version = node_state::kVersion;
  ns.size = sizeof(node_state);
}

bool publisher_stale(const node_state& ns, std::int64_t now_ms, std::int64_t stale_ms) {
  const std::uint64_t id = ns.publisher_id.load(std::memory_order_acquire);
  if (id == 0 || !process_alive(static_cast<std::int32_t>(id >> 32))) return true;
  return stale_ms > 0 && now_ms - ns.published_ms.load(std::memory_order_acquire) > stale_ms;
}

std::int64_t publisher_stale_after_ms(const node_state& ns) {
  const std::int64_t every = ns.publish_every_ms.load(std::memory_order_relaxed);
  // A heartbeat every second (or faster): 4 s without one, a stall no healthy holder has
  // (its loop never blocks), and a takeover within one default poll interval. A holder
  // that advertises a longer interval (a trainctl before the heartbeat, whose publisher
  // refreshed at each poll) keeps two of them and a second.
  if (every > 0 && every <= 1000) return std::max<std::int64_t>(3000, 3 * every + 1000);
  return std::max<std::int64_t>(3000, 2 * (every > 0 ? every : 10000) + 1000);
}

int node_state_file::register_switch(switch_kind kind, const std::string& name, const std::string& path) {
  return claim_switch_slot(*state_, kind, name, path);
}

int claim_switch_slot(node_state& ns, switch_kind kind, const std::string& name, const std::string& path) {
  if (path.size() >= kMaxPath) return -1;
  for (int i = 0; i < kMaxSlots; ++i) {
    switch_slot& s = ns.slots[i];
    std::uint32_t st = s.state.load(std::memory_order_acquire);
    if (st == 0) {
      std::uint32_t expected = 0;
      if (s.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
        s.kind = static_cast<std::uint32_t>(kind);
        std::snprintf(s.name, sizeof s.name, "%s", name.c_str());
        std::snprintf(s.path, sizeof s.path, "%s", path.c_str());
        s.state.store(2, std::memory_order_release);
        ns.seq.fetch_add(1, std::memory_order_release);
        return i;
      }
      st = expected;
    }
    // Another process is writing this slot: its fields are complete within microseconds.
    for (int spin = 0; st == 1 && spin < 100000; ++spin) st = s.state.load(std::memory_order_acquire);
    if (st == 2 && s.kind == static_cast<std::uint32_t>(kind) && path == s.path) return i;
  }
  return -1;
}

bool valid_phase_name(const std::string& name) {
  if (name.empty() || name.size() >= kMaxName || name[0] == '.' || name[0] == '-') return false;
  for (const char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') return false;
  return true;
}

int claim_phase_slot(node_state& ns, const std::string& name) {
  if (!valid_phase_name(name)) return -1;
  for (int i = 0; i < kMaxPhases; ++i) {
    phase_slot& s = ns.phases[i];
    std::uint32_t st = s.state.load(std::memory_order_acquire);
    if (st == 0) {
      std::uint32_t expected = 0;
      if (s.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
        std::snprintf(s.name, sizeof s.name, "%s", name.c_str());
        s.state.store(2, std::memory_order_release);
        return i;
      }
      st = expected;
    }
    for (int spin = 0; st == 1 && spin < 100000; ++spin) st = s.state.load(std::memory_order_acquire);
    if (st == 2 && std::strncmp(s.name, name.c_str(), sizeof s.name) == 0) return i;
  }
  return -1;
}

void raise_to(std::atomic<std::int64_t>& longest, std::int64_t ms) {
  std::int64_t seen = longest.load(std::memory_order_relaxed);
  while (ms > seen && !longest.compare_exchange_weak(seen, ms, std::memory_order_relaxed)) {
  }
}

int claim_beat_slot(node_state& ns, std::int32_t pid) {
  for (int i = 0; i < kMaxRanks; ++i)
    if (ns.beats[i].pid.load(std::memory_order_acquire) == pid) return i;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < kMaxRanks; ++i) {
      rank_beat& b = ns.beats[i];
      std::int32_t old = b.pid.load(std::memory_order_acquire);
      // First pass: free slots; second: slots of processes that are gone.
      if (pass == 0 ? old != 0 : (old == 0 || kill(old, 0) == 0 || errno != ESRCH)) continue;
      if (!b.pid.compare_exchange_strong(old, pid, std::memory_order_acq_rel)) continue;
      b.beat_ms.store(0, std::memory_order_relaxed);
      b.step.store(0, std::memory_order_relaxed);
      b.step_us.store(0, std::memory_order_relaxed);
      b.slow.store(0, std::memory_order_relaxed);
      b.exiting.store(0, std::memory_order_relaxed);
      b.phase.store(kPhaseTraining, std::memory_order_relaxed);
      b.phase_ms.store(0, std::memory_order_relaxed);
      b.work_marked.store(0, std::memory_order_relaxed);
      b.timed_steps.store(0, std::memory_order_relaxed);
      b.work_total_us.store(0, std::memory_order_relaxed);
      b.slowest_total_us.store(0, std::memory_order_relaxed);
      b.rank.store(-1, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

int node_state_file::open_supervisors_copy() const {
  const char* state = std::getenv("TRAINCTL_STATE");
  const char* pid = std::getenv("TRAINCTL_SUPERVISOR_PID");
  const char* fd = std::getenv("TRAINCTL_STATE_FD");
  const auto number = [](const char* v) {
    return v != nullptr && *v != '\0' && std::strlen(v) <= 9 && std::strspn(v, "0123456789") == std::strlen(v);
  };
  if (state == nullptr || path_ != state || !number(pid) || !number(fd)) {
    errno = ENOENT;
    return -1;
  }
  // A magic link under /proc, followed on purpose (O_NOFOLLOW would refuse it): no
  // shared directory is on the way, and what it reaches must be this user's removed node
  // state (no name left: nothing anyone could have swapped in).
  const std::string link = std::string("/proc/") + pid + "/fd/" + fd;
  const int copy = open(link.c_str(), O_RDWR | O_CLOEXEC | O_NONBLOCK);
  struct stat st {};
  if (copy >= 0 && fstat(copy, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid() && st.st_nlink == 0 &&
      static_cast<size_t>(st.st_size) == sizeof(node_state))
    return copy;
  if (copy >= 0) close(copy);
  errno = ENOENT;
  return -1;
}

bool node_state_file::removed() const {
  struct stat st {};
  return fd_ >= 0 && fstat(fd_, &st) == 0 && st.st_nlink == 0;
}

void node_state_file::unlink_if_last() {
  if (fd_ < 0) return;
  // A removed state's name is gone, or names a file made since: never this one's to unlink.
  struct stat mine {
  }, named{};
  if (fstat(fd_, &mine) != 0 || mine.st_nlink == 0 ||
      fstatat(dir_fd_, name_.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0 || named.st_ino != mine.st_ino ||
      named.st_dev != mine.st_dev)
    return;
  if (flock(fd_, LOCK_EX | LOCK_NB) == 0) {
    unlinkat(dir_fd_, name_.c_str(), 0);
    unlinkat(dir_fd_, (name_ + ".lock").c_str(), 0);
    flock(fd_, LOCK_SH);
  }
}

bool claim_once(const std::string& name) {
  assert(name.compare(0, 5, "once.") == 0 && name.find('/') == std::string::npos);
  const int dir_fd = open_private_dir(state_dir());
  const int fd = openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  const int err = errno;
  close(dir_fd);
  if (fd >= 0) {
    close(fd);
    return true;
  }
  if (err == EEXIST) return false;
  errno = err;
  throw sys_error("cannot create " + state_dir() + "/" + name);
}

bool was_claimed(const std::string& name) {
  assert(name.compare(0, 5, "once.") == 0 && name.find('/') == std::string::npos);
  int dir_fd = -1;
  try {
    dir_fd = open_private_dir(state_dir());
  } catch (const std::exception&) {
    return false;  // no private directory: nothing was claimed in it
  }
  struct stat st {};
  const bool there =
      fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid();
  close(dir_fd);
  return there;
}

bool claim_of_job(const std::string& name, const std::string& job) {
  if (job.empty() || name.compare(0, 5, "once.") != 0) return false;
  const size_t what_end = name.find('.', 5);
  return what_end != std::string::npos && name.compare(what_end + 1, job.size(), job) == 0 &&
         name.size() > what_end + 1 + job.size() && name[what_end + 1 + job.size()] == '.';
}

int sweep_stale_state(const std::string& dir, int min_age_s, const std::string& ended_job) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return 0;  // nothing was ever made here
  int dir_fd = -1;
  try {
    dir_fd = open_private_dir(dir);
  } catch (const std::exception&) {
    return 0;  // not ours: the caller's own open reports it
  }
  DIR* d = fdopendir(dup(dir_fd));
  if (d == nullptr) {
    close(dir_fd);
    return 0;
  }
  const std::int64_t old_enough = unix_now_ms() / 1000 - min_age_s;
  std::vector<std::string> stale;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || fstatat(dir_fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (!S_ISREG(st.st_mode) || st.st_uid != getuid() || st.st_ctim.tv_sec > old_enough) continue;
    if (name.compare(0, 7, "stacks.") == 0) {  // a rank's Python stack file: kept while it lives
      const long pid = std::strtol(name.c_str() + 7, nullptr, 10);
      if (pid > 0 && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) stale.push_back(name);
      continue;
    }
    if (name.compare(0, 5, "once.") == 0) {  // claim_once: kept while its job may still run
      if (st.st_ctim.tv_sec <= old_enough - kOnceKeepS || claim_of_job(name, ended_job)) stale.push_back(name);
      continue;
    }
    const bool lock = name.size() > 5 && name.compare(name.size() - 5, 5, ".lock") == 0;
    if (lock || name.find(".new.") != std::string::npos) {
      // A lock whose state file is gone, or a temporary file a killed creator left.
      if (!lock || fstatat(dir_fd, name.substr(0, name.size() - 5).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
        stale.push_back(name);
      continue;
    }
    const int fd = openat(dir_fd, e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) continue;
    std::uint64_t magic = 0;
    // A state by its content, or by its name (default_state_path's keys: "<job>.<step>-
    // <node>", "ppid<N>", "pid<N>") whatever its content: a zeroed or truncated state of
    // a finished job has no magic left and was never swept.
    const bool state_name =
        (name[0] >= '0' && name[0] <= '9') || name.compare(0, 3, "pid") == 0 || name.compare(0, 4, "ppid") == 0;
    const bool is_state = state_name || (static_cast<size_t>(st.st_size) == sizeof(node_state) &&
                                         pread(fd, &magic, sizeof magic, 0) == static_cast<ssize_t>(sizeof magic) &&
                                         magic == node_state::kMagic);
    if (is_state && flock(fd, LOCK_EX | LOCK_NB) == 0) {  // nobody has it open
      stale.push_back(name);
      stale.push_back(name + ".lock");
    }
    close(fd);
  }
  closedir(d);
  int removed = 0;
  for (const auto& name : stale) removed += unlinkat(dir_fd, name.c_str(), 0) == 0;
  close(dir_fd);
  return removed;
}

}  // namespace trainctl
