#include "step_presence.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "node_names.hpp"
#include "owned_fd.hpp"
#include "stack_dump.hpp"

namespace trainctl {
namespace {

constexpr char kAlive[] = ".alive";

std::string read_boot_id() {
  const owned_fd fd(open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  char buf[64] = {};
  const ssize_t n = fd ? read(fd.get(), buf, sizeof buf - 1) : -1;
  std::string id = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  // A uuid: letters, digits and dashes only (it goes into a line of a file).
  for (const char c : id)
    if (std::strchr("0123456789abcdefABCDEF-", c) == nullptr) return "";
  return id;
}

std::int64_t mtime_ms(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
}

}  // namespace

clock_facts this_clock() {
  clock_facts c;
  c.boot = read_boot_id();
  struct timex t {};
  t.modes = 0;  // read only: any user may
  if (adjtimex(&t) >= 0) {
    c.synced = (t.status & STA_UNSYNC) == 0;
    c.max_error_us = t.maxerror;
  }
  return c;
}

std::string clock_line(const clock_facts& c) {
  return "boot=" + (c.boot.empty() ? "-" : c.boot) + " synced=" + (c.synced ? "1" : "0") +
         " max_error_us=" + std::to_string(c.max_error_us) + "\n";
}

clock_facts parse_clock_line(const std::string& line) {
  clock_facts c;
  char boot[64] = {};
  int synced = 0;
  long long err = -1;
  if (std::sscanf(line.c_str(), "boot=%63s synced=%d max_error_us=%lld", boot, &synced, &err) != 3) return c;
  c.boot = std::strcmp(boot, "-") == 0 ? "" : boot;
  c.synced = synced == 1;
  c.max_error_us = err;
  return c;
}

std::int64_t modified_ms(int dir_fd, const std::string& name) {
  struct stat st {};
  if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) || st.st_uid != getuid())
    return -1;
  return mtime_ms(st);
}

std::vector<node_presence> read_presences(int dir_fd) {
  std::vector<node_presence> out;
  DIR* d = fdopendir(dup(dir_fd));
  if (d != nullptr) rewinddir(d);  // the duplicate shares the offset of an earlier read
  const std::size_t suffix = sizeof kAlive - 1;
  while (dirent* e = d != nullptr ? readdir(d) : nullptr) {
    const std::string name = e->d_name;
    if (name.size() <= suffix || name.compare(name.size() - suffix, suffix, kAlive) != 0) continue;
    node_presence p;
    p.node = name.substr(0, name.size() - suffix);
    if (!valid_node_name(p.node)) continue;
    const owned_fd f = open_own_file(dir_fd, name, O_RDONLY, 0);
    struct stat st {};
    char buf[160] = {};
    if (!f || fstat(f.get(), &st) != 0) continue;
    const ssize_t n = read(f.get(), buf, sizeof buf - 1);
    if (n > 0) p.clock = parse_clock_line(std::string(buf, static_cast<std::size_t>(n)));
    p.touched_ms = mtime_ms(st);
    out.push_back(p);
  }
  if (d != nullptr) closedir(d);
  return out;
}

std::string renew_presence(int dir_fd, const std::string& me, const clock_facts& c) {
  const std::string name = me + kAlive;
  if (modified_ms(dir_fd, name) < 0) {
    std::string why = append_in_dir(dir_fd, name, clock_line(c), 0600);
    if (!why.empty()) return why;
  }
  const owned_fd f = open_own_file(dir_fd, name, O_WRONLY, 0);
  if (!f || futimens(f.get(), nullptr) != 0)
    return "cannot touch " + name + ": " + (errno == EPERM ? "not a regular file of this user" : std::strerror(errno));
  return "";
}

std::chrono::milliseconds step_presence::tick(const std::string& logs, const std::string& leaf) {
  using std::chrono::milliseconds;
  const auto now = std::chrono::steady_clock::now();
  if (writer_ && now >= next_) {  // a stalled mount: this renewal is lost, the next one tries again
    writer_->abandon();
    writer_.reset();
  }
  if (stopped_) return kLeaseInterval;
  if (writer_ || now < next_) return std::chrono::duration_cast<milliseconds>(next_ - now);
  next_ = now + kLeaseInterval;
  const std::string me = node_name();
  const clock_facts c = clock_;
  child_spec spec;
  spec.deadline = kLeaseInterval;
  spec.ignore_signals = opts_.notices;
  spec.ignore_signals.push_back(opts_.graceful_signal);
  spec.work = [logs, leaf, me, c]() -> std::string {
    std::string why;
    const std::string root = valid_node_name(me) ? evidence_root(logs, false, &why) : "";
    if (root.empty()) return why.empty() ? "'" + me + "' is not a node name" : why;
    const owned_fd fd = open_stacks_dir(root + "/" + leaf, false, &why);
    return fd ? renew_presence(fd.get(), me, c) : why;
  };
  writer_ = std::make_unique<started_child>(spec);
  return kLeaseInterval;
}

bool step_presence::reaped(pid_t pid, int status) {
  if (!writer_ || pid != writer_->pid()) return false;
  const child_result r = writer_->finish(status);
  writer_.reset();
  const std::string why = !r.output.empty() ? r.output : r.ok() ? "" : r.error;
  if (!why.empty() && !said_) {
    said_ = true;
    log_("crash evidence: this node's sign of life not written (" + why.substr(0, why.find('\n')) +
         "): a crash in this step will blame no node");
  }
  return true;
}

void step_presence::stop() {
  stopped_ = true;
  if (!writer_) return;
  int status = 0;
  const pid_t pid = writer_->pid();
  if (writer_->wait_exit(std::chrono::milliseconds(2000), &status)) {
    reaped(pid, status);
    return;
  }
  writer_->abandon();
  writer_.reset();
}

}  // namespace trainctl
