#include "notice_hook.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "fixture.hpp"

using namespace trainctl;
using namespace std::chrono_literals;

namespace {

// Drives the hook as the supervisor's loop does: tick, reap.
void run_until_done(notice_hook& h, std::chrono::milliseconds limit) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (h.running() && std::chrono::steady_clock::now() < end) {
    h.tick();
    int status = 0;
    const pid_t p = waitpid(-1, &status, WNOHANG);
    if (p > 0) h.reaped(p, status);
    std::this_thread::sleep_for(10ms);
  }
}

}  // namespace

TEST(NoticeHook, OncePerKindWithTheNoticeInItsEnvironment) {
  trainctl_test::temp_dir t;
  unsetenv("SLURM_JOB_ID");
  unsetenv("SLURM_NODEID");
  std::vector<std::string> lines;
  notice_hook h("echo \"$TRAINCTL_NOTICE $TRAINCTL_DEADLINE $TRAINCTL_NOTICE_DETAIL\" >> " + (t / "out"), 5s, {},
                [&](const std::string& l) { lines.push_back(l); });
  h.notice("deadline", 1234000, 0, "");
  run_until_done(h, 5s);
  h.notice("deadline", 1234000, 0, "");  // the same kind again: nothing
  h.notice("hang", 0, 0, "3 of 4 ranks in f");
  run_until_done(h, 5s);
  EXPECT_EQ(trainctl_test::read_file(t / "out"), "deadline 1234 \nhang  3 of 4 ranks in f\n");
}

TEST(NoticeHook, KilledAtItsTimeLimitWithItsWholeGroup) {
  unsetenv("SLURM_JOB_ID");
  std::vector<std::string> lines;
  notice_hook h("sleep 30 & sleep 30", 1s, {}, [&](const std::string& l) { lines.push_back(l); });
  const auto t0 = std::chrono::steady_clock::now();
  h.notice("signal", 0, 0, "");
  run_until_done(h, 10s);
  EXPECT_FALSE(h.running());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.back().find("ended at its time limit of 1s"), std::string::npos) << lines.back();
}

TEST(NoticeHook, OnlyOnTheFirstNode) {
  setenv("SLURM_NODEID", "1", 1);
  notice_hook h("true", 5s, {}, [](const std::string&) {});
  h.notice("deadline", 0, 0, "");
  EXPECT_FALSE(h.running());
  unsetenv("SLURM_NODEID");
}

// Job ids start again when a cluster's state is reset: a marker of an earlier run with
// the same id must not silence this run's hook, and a suppressed hook says so.
TEST(NoticeHook, OncePerRunNotPerJobId) {
  trainctl_test::temp_dir t, shm;
  setenv("TRAINCTL_SHM_DIR", shm.path().c_str(), 1);
  setenv("TRAINCTL_RUN_DIR", (shm / "no-run").c_str(), 1);
  unsetenv("XDG_RUNTIME_DIR");
  setenv("SLURM_JOB_ID", "17", 1);
  unsetenv("SLURM_NODEID");
  std::vector<std::string> lines;
  auto once = [&](const char* start) {
    setenv("SLURM_JOB_START_TIME", start, 1);
    notice_hook h("echo run >> " + (t / "out"), 5s, {}, [&](const std::string& l) { lines.push_back(l); });
    h.notice("deadline", 0, 0, "");
    run_until_done(h, 5s);
  };
  once("1700000000");
  once("1700000000");  // another supervisor of the same run
  once("1800000000");  // job 17 again, after a reset of the cluster
  EXPECT_EQ(trainctl_test::read_file(t / "out"), "run\nrun\n");
  bool said = false;
  for (const auto& l : lines) said |= l.find("not running the command: another supervisor") != std::string::npos;
  EXPECT_TRUE(said);
  unsetenv("SLURM_JOB_START_TIME");
  unsetenv("SLURM_JOB_ID");
  unsetenv("TRAINCTL_SHM_DIR");
  unsetenv("TRAINCTL_RUN_DIR");
}
