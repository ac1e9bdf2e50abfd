// Helpers for unit tests: a temporary directory tree that removes itself.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

namespace trainctl_test {

// The plugin's /run/trainctl/<uid> exists on a machine that ran jobs under it; unit
// tests of the fallback paths never look there.
inline const bool kNoRunDir = setenv("TRAINCTL_RUN_DIR", "/nonexistent/trainctl-run", 0) == 0;

class temp_dir {
 public:
  temp_dir() {
    char tmpl[] = "/tmp/trainctl-test-XXXXXX";
    char* p = mkdtemp(tmpl);
    if (p == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~temp_dir() {
    const std::string cmd = "rm -rf '" + path_ + "'";
    if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", path_.c_str());
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

  // Writes `text` to rel, creating parent directories.
  void write(const std::string& rel, const std::string& text) const {
    const std::string full = path_ + "/" + rel;
    const std::string dir = full.substr(0, full.rfind('/'));
    const std::string cmd = "mkdir -p '" + dir + "'";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("mkdir failed");
    const int fd = open(full.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot write " + full);
    const bool whole = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    close(fd);
    if (!whole) throw std::runtime_error("cannot write " + full);
  }

 private:
  std::string path_;
};

// As touch(1): creates the file, or gives an existing one a new mtime (opening it alone does not).
// Never through a symlink, as everything trainctl opens where others may write.
inline void touch(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) close(fd);
  utimensat(AT_FDCWD, path.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
}
// Appends `text` to `path` (created 0600), never through a symlink.
inline void append(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return;
  (void)!write(fd, text.data(), text.size());
  close(fd);
}
// A regular file's text; "" for anything else (a FIFO or link a test planted is neither
// waited on nor followed).
inline std::string read_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st {};
  std::string text;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    char buf[4096];
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  }
  close(fd);
  return text;
}
// The state letter of process `pid` in /proc/PID/stat ('R', 'S', ...; 0 when unreadable):
// a test waits for a child it forked to be asleep where it put it before it looks.
inline char process_state(pid_t pid) {
  const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  const auto paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : '\0';
}
// fork() for a test's child that sleeps until the test kills it: the child dies with the
// thread that forked it. A child left asleep after a failed ASSERT holds ctest's output
// pipe open, and ctest waits for the pipe, not the process: the whole test command
// stalls until its own limit. Credentials changed in the child clear this
// (setuid); such a child asks again after.
inline pid_t fork_child() {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0);  // the parent went before the line above
  }
  return pid;
}
inline bool exists(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0;
}

// Sets an environment variable for a scope, and puts back what was there before.
class scoped_env {
 public:
  scoped_env(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~scoped_env() {
    if (had_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  scoped_env(const scoped_env&) = delete;
  scoped_env& operator=(const scoped_env&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

}  // namespace trainctl_test
