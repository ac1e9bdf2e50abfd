#include "node_health.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <thread>

using namespace trainctl;

namespace {
// A real zombie: a child that exited and that this process has not reaped.
pid_t make_zombie(int how) {
  const pid_t p = fork();
  if (p == 0) {
    if (how > 0) {
      signal(how, SIG_DFL);
      raise(how);
    }
    _exit(-how);
  }
  for (int i = 0; i < 200 && zombie_wait_status(p) < 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return p;
}
}  // namespace

// kill(pid, 0) succeeds on a zombie: a rank that exited and waits for its launcher to
// reap it looked hung, and end-step killed the healthy ranks for it.
TEST(NodeHealth, AZombieIsNoLiveRankAndItsEndIsReadable) {
  const pid_t z = make_zombie(SIGSEGV);
  EXPECT_FALSE(live_process_of_mine(z));
  const int st = zombie_wait_status(z);
  ASSERT_GE(st, 0);
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV) << st;
  waitpid(z, nullptr, 0);
  EXPECT_EQ(zombie_wait_status(z), -1) << "reaped: nothing to read";
  const pid_t e = make_zombie(-1);  // sys.exit(1): the program's own exit
  const int est = zombie_wait_status(e);
  EXPECT_TRUE(WIFEXITED(est) && WEXITSTATUS(est) == 1) << est;
  waitpid(e, nullptr, 0);
  EXPECT_TRUE(live_process_of_mine(getpid()));
}

// kill(pid, 0) also says yes (or EPERM) for a pid another user's process got.
TEST(NodeHealth, AnotherUsersProcessIsNoRank) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to start a process as another user";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t p = fork();
  if (p == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(1);
    ssize_t n = write(ready[1], "x", 1);
    (void)n;
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  EXPECT_FALSE(live_process_of_mine(p));
  kill(p, SIGKILL);
  waitpid(p, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
}

TEST(NodeHealth, OnlyFaultSignalsAreEvidenceAgainstANode) {
  for (int s : {SIGSEGV, SIGBUS, SIGILL, SIGABRT, SIGFPE}) EXPECT_TRUE(is_fault_signal(s)) << s;
  for (int s : {SIGTERM, SIGKILL, SIGINT, SIGUSR1, 0}) EXPECT_FALSE(is_fault_signal(s)) << s;
}
