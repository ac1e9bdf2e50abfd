#include "node_state.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <new>
#include <stdexcept>
#include <system_error>

namespace trainctl {
namespace {

std::system_error sys_error(const std::string& what) { return std::system_error(errno, std::generic_category(), what); }

const char* env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : fallback;
}

}  // namespace

std::int64_t unix_now_ms() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
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
  return std::string(env_or("TRAINCTL_SHM_DIR", "/dev/shm")) + "/trainctl-" + std::to_string(getuid()) + "-" + key;
}

// Creates a fully initialised state file under a temporary name and links it into
// place, so that a file found under `path` is never half-written.
static void create_state_file(const std::string& path) {
  const std::string tmp = path + ".new." + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw sys_error("cannot create node state " + tmp);
  node_state header{};
  header.magic = node_state::kMagic;
  header.version = node_state::kVersion;
  header.size = sizeof(node_state);
  const bool written = write(fd, &header, sizeof header) == static_cast<ssize_t>(sizeof header);
  const int saved = errno;
  close(fd);
  if (!written) {
    unlink(tmp.c_str());
    errno = saved;
    throw sys_error("cannot write node state " + tmp);
  }
  const int linked = link(tmp.c_str(), path.c_str());
  const int link_errno = errno;
  unlink(tmp.c_str());
  if (linked != 0 && link_errno != EEXIST) {
    errno = link_errno;
    throw sys_error("cannot create node state " + path);
  }
}

node_state_file::node_state_file(const std::string& path) : path_(path) {
  fd_ = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd_ < 0 && errno == ENOENT) {
    create_state_file(path);
    fd_ = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  }
  if (fd_ < 0) throw sys_error("cannot open node state " + path);
  struct stat st {};
  if (fstat(fd_, &st) != 0 || st.st_uid != getuid() || !S_ISREG(st.st_mode) ||
      static_cast<size_t>(st.st_size) != sizeof(node_state)) {
    close(fd_);
    fd_ = -1;
    throw std::runtime_error("node state " + path + " is not a trainctl state file of this user and version");
  }
  void* map = mmap(nullptr, sizeof(node_state), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (map == MAP_FAILED) {
    const int saved = errno;
    close(fd_);
    fd_ = -1;
    errno = saved;
    throw sys_error("cannot map node state " + path);
  }
  state_ = static_cast<node_state*>(map);
  if (state_->magic != node_state::kMagic || state_->version != node_state::kVersion ||
      state_->size != sizeof(node_state)) {
    munmap(map, sizeof(node_state));
    state_ = nullptr;
    close(fd_);
    fd_ = -1;
    throw std::runtime_error("node state " + path + " has another format (another trainctl version?)");
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
}

node_state_file::~node_state_file() {
  release_publisher();
  if (state_ != nullptr) munmap(state_, sizeof(node_state));
  if (fd_ >= 0) close(fd_);
}

bool node_state_file::try_become_publisher() {
  if (lock_fd_ >= 0) return true;
  const std::string lock_path = path_ + ".lock";
  int fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return false;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return false;
  }
  lock_fd_ = fd;
  state_->publisher_pid.store(getpid(), std::memory_order_relaxed);
  return true;
}

void node_state_file::release_publisher() {
  if (lock_fd_ < 0) return;
  state_->publisher_pid.store(0, std::memory_order_relaxed);
  close(lock_fd_);  // closing drops the flock
  lock_fd_ = -1;
}

int node_state_file::register_switch(switch_kind kind, const std::string& name, const std::string& path) {
  if (path.size() >= kMaxPath) return -1;
  for (int i = 0; i < kMaxSlots; ++i) {
    switch_slot& s = state_->slots[i];
    std::uint32_t st = s.state.load(std::memory_order_acquire);
    if (st == 0) {
      std::uint32_t expected = 0;
      if (s.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
        s.kind = static_cast<std::uint32_t>(kind);
        std::snprintf(s.name, sizeof s.name, "%s", name.c_str());
        std::snprintf(s.path, sizeof s.path, "%s", path.c_str());
        s.state.store(2, std::memory_order_release);
        state_->seq.fetch_add(1, std::memory_order_release);
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

void node_state_file::unlink_if_last() {
  if (fd_ < 0) return;
  if (flock(fd_, LOCK_EX | LOCK_NB) == 0) {
    unlink(path_.c_str());
    unlink((path_ + ".lock").c_str());
    flock(fd_, LOCK_SH);
  }
}

}  // namespace trainctl
