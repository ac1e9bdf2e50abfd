#include "node_health.hpp"

#include <gtest/gtest.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

#include "fixture.hpp"
#include "stack_dump.hpp"

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
  const pid_t p = trainctl_test::fork_child();
  if (p == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(1);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // cleared by setuid
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

// A TERM names a peer's death only when that death could have brought it: srun sends the
// step's other tasks TERM within seconds of a failed task's end. CI saw a test's scancel
// 294 s after a rank on n1 failed to start taken for "srun --kill-on-bad-exit". The
// evidence line is the one a node's supervisor writes at its first rank death.
TEST(NodeHealth, APeersDeathExplainsATermOnlyWhileItIsRecent) {
  trainctl_test::temp_dir t;
  trainctl_test::scoped_env node("SLURMD_NODENAME", "n1");
  trainctl_test::scoped_env step("SLURM_STEP_ID", "0");
  trainctl_test::scoped_env nodes("SLURM_STEP_NUM_NODES", "3");
  trainctl_test::scoped_env restart("SLURM_RESTART_COUNT", "0");
  supervisor_options o;
  o.job_id = "4242";
  o.log_dir = t.path();
  node_health health(
      o, [](const std::string&) {}, [](const std::string&) {});
  std::string why;
  const std::string root = evidence_root(t.path(), false, &why);
  ASSERT_FALSE(root.empty()) << why;
  const std::string dir = root + "/crash-4242.0.0";
  ASSERT_EQ(mkdir(dir.c_str(), 0700), 0);
  const auto now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  const auto died = [&](const char* node, long long ago_ms, int status) {
    trainctl_test::append(dir + "/" + node,
                          "first_ms=" + std::to_string(now_ms - ago_ms) + " status=" + std::to_string(status) + "\n");
  };
  EXPECT_EQ(health.peer_death(), "") << "nobody died";
  died("n2", 294000, 1 << 8);  // exit status 1, nearly 5 minutes ago
  EXPECT_EQ(health.peer_death(), "") << "a death 294 s before the TERM did not bring it";
  died("n3", 2000, SIGABRT);
  const std::string recent = health.peer_death();
  EXPECT_EQ(recent.rfind("a rank on n3 ended with SIGABRT ", 0), 0u) << recent;
}
