#include "drill_reaper.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace trainctl::commands {

namespace {

// The reaper, in the forked child: only async-signal-safe calls until exec or _exit (the
// drill may have threads). Reads "S", "A<id>" and "D" lines; at end of file after "S"
// without "D", execs scancel with the id, else with `by_name` (--name=, --user=).
[[noreturn]] void reap(int in, char* const by_name[]) {
  setsid();
  for (const int sig : {SIGHUP, SIGINT, SIGTERM, SIGQUIT, SIGPIPE}) signal(sig, SIG_IGN);
  const int null = open("/dev/null", O_RDWR | O_NOFOLLOW);
  for (int fd = 0; fd < 3; ++fd)
    if (null >= 0) dup2(null, fd);
  for (int fd = 3; fd < 1024; ++fd)
    if (fd != in) close(fd);
  bool submitting = false, done = false;
  char scancel[] = "scancel";
  char id_slot[32] = {};
  std::size_t id_len = 0;
  char line[64];
  std::size_t n = 0;
  char c = 0;
  for (;;) {
    const ssize_t r = read(in, &c, 1);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (c != '\n') {
      if (n < sizeof line - 1) line[n++] = c;
      continue;
    }
    if (n == 1 && line[0] == 'S') submitting = true;
    if (n == 1 && line[0] == 'D') done = true;
    if (n > 1 && line[0] == 'A' && n - 1 < sizeof id_slot) {
      id_len = n - 1;
      std::memcpy(id_slot, line + 1, id_len);
      id_slot[id_len] = '\0';
    }
    n = 0;
  }
  if (done || !submitting) _exit(0);
  char* const by_id[] = {scancel, id_slot, nullptr};
  execvp("scancel", id_len > 0 ? by_id : by_name);
  _exit(127);
}

}  // namespace

drill_reaper::drill_reaper(const std::string& job_name, const std::string& user) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return;
  // What the child needs is made before the fork.
  std::string name_arg = "--name=" + job_name, user_arg = "--user=" + user;
  std::vector<char> name_buf(name_arg.begin(), name_arg.end()), user_buf(user_arg.begin(), user_arg.end());
  name_buf.push_back('\0');
  user_buf.push_back('\0');
  char scancel[] = "scancel";
  char* const by_name[] = {scancel, name_buf.data(), user_buf.data(), nullptr};
  const pid_t pid = fork();
  if (pid == 0) {
    close(p[1]);
    reap(p[0], by_name);
  }
  close(p[0]);
  if (pid < 0) {
    close(p[1]);
    return;
  }
  pid_ = pid;
  fd_ = p[1];
}

// Without done(): the reaper reads the end of the pipe and cancels on its own, outliving
// the drill (no wait here for its scancel).
drill_reaper::~drill_reaper() {
  if (fd_ >= 0) close(fd_);
}

void drill_reaper::say(const std::string& line) {
  if (fd_ < 0) return;
  const std::string text = line + "\n";
  if (write(fd_, text.data(), text.size()) != static_cast<ssize_t>(text.size())) {
    // A reaper that is gone cancels nothing; the drill's own cancel still runs.
  }
}

void drill_reaper::submitting() { say("S"); }
void drill_reaper::array_is(const std::string& id) { say("A" + id); }

void drill_reaper::done() {
  say("D");
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (pid_ > 0) waitpid(pid_, nullptr, 0);
  pid_ = 0;
}

}  // namespace trainctl::commands
