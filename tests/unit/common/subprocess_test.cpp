// run_child: the one way the tools start a child (scontrol, squeue, quota, sendmail,
// statfs), always within its deadline.
#include "subprocess.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>

using namespace trainctl;
using namespace std::chrono_literals;

namespace {
child_spec cmd(std::vector<std::string> argv, std::chrono::milliseconds deadline = 5s) {
  child_spec s;
  s.argv = std::move(argv);
  s.deadline = deadline;
  return s;
}
template <typename F>
std::chrono::milliseconds timed(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start);
}
}  // namespace

TEST(Subprocess, OutputAndStatus) {
  auto r = run_child(cmd({"echo", "JobId=1"}));
  EXPECT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.output, "JobId=1\n");
  r = run_child(cmd({"sh", "-c", "exit 3"}));
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("sh -c exit 3: failed (exit 3)"), std::string::npos) << r.error;
  r = run_child(cmd({"/nonexistent/scontrol"}));
  EXPECT_NE(r.error.find("exit 127"), std::string::npos) << r.error;
}

// A controller (or a quota command on the mount it measures) that never answers.
TEST(Subprocess, NoAnswerIsKilledAtTheDeadline) {
  child_result r;
  EXPECT_LT(timed([&] { r = run_child(cmd({"sleep", "30"}, 200ms)); }), 3s);
  EXPECT_FALSE(r.finished);
  EXPECT_NE(r.error.find("no answer within 200ms"), std::string::npos) << r.error;
  // A shell whose own child keeps running is ended with it (one process group).
  EXPECT_LT(timed([&] { r = run_child(cmd({"sh", "-c", "sleep 30; echo late"}, 200ms)); }), 3s);
  EXPECT_FALSE(r.finished);
}

TEST(Subprocess, AHangingCallInTheChildIsAbandoned) {
  child_spec s;
  s.work = [] {
    pause();  // stands in for statfs on a dead mount
    return std::string("never");
  };
  s.deadline = 300ms;
  child_result r;
  EXPECT_LT(timed([&] { r = run_child(s); }), 3s);
  EXPECT_FALSE(r.finished);
  s.work = [] { return std::string("ok"); };
  r = run_child(s);
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.output, "ok");
}

// sendmail that exits without reading its input killed trainwatch with SIGPIPE (141).
TEST(Subprocess, AChildThatReadsNothingCostsNoSigpipe) {
  auto s = cmd({"true"});
  s.input = std::string(4 << 20, 'x');  // far more than a pipe holds
  const auto r = run_child(s);
  EXPECT_TRUE(r.finished);
  sigset_t pending;
  sigpending(&pending);
  EXPECT_FALSE(sigismember(&pending, SIGPIPE));
}

TEST(Subprocess, InputReachesTheChild) {
  auto s = cmd({"wc", "-c"});
  s.input = std::string(200000, 'x');
  const auto r = run_child(s);
  EXPECT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(std::stol(r.output), 200000);
}

// sendmail that reads nothing and never exits ignored --delivery-timeout.
TEST(Subprocess, AChildThatNeitherReadsNorExitsMeetsTheDeadline) {
  auto s = cmd({"sleep", "30"}, 300ms);
  s.input = std::string(1 << 20, 'x');
  child_result r;
  EXPECT_LT(timed([&] { r = run_child(s); }), 3s);
  EXPECT_FALSE(r.finished);
}

TEST(Subprocess, AGrandchildHoldingStdoutIsNotWaitedFor) {
  child_result r;
  EXPECT_LT(timed([&] { r = run_child(cmd({"sh", "-c", "echo hi; sleep 2 & exit 0"})); }), 3s);
  EXPECT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.output, "hi\n");
}

// The supervisor's EndTime query: started now, reaped by the caller, and alive through
// the TERM that SLURM sends to every process of the step.
TEST(Subprocess, AStartedChildIgnoresWhatItWasToldToAndIsFinishedByItsReaper) {
  child_spec s = cmd({"sh", "-c", "sleep 0.3; echo answer"});
  s.ignore_signals = {SIGTERM, SIGUSR1};
  started_child child(s);
  ASSERT_EQ(child.error(), "");
  usleep(100000);
  kill(child.pid(), SIGTERM);  // the job's own TERM
  kill(child.pid(), SIGUSR1);
  int status = 0;
  ASSERT_EQ(waitpid(child.pid(), &status, 0), child.pid());
  const child_result r = child.finish(status);
  EXPECT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.output, "answer\n");
}

TEST(Subprocess, AStartedChildPastItsDeadlineIsKilledAndSaysSo) {
  child_spec s = cmd({"sleep", "30"}, 200ms);
  started_child child(s);
  const child_result r = child.abandon();
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.error.find("sleep 30: no answer within"), std::string::npos) << r.error;
  int status = 0;
  ASSERT_EQ(waitpid(child.pid(), &status, 0), child.pid());
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

// A caller at its end waits a bounded while for its helper, then gives it up.
TEST(Subprocess, AStartedChildIsWaitedForAtMostTheBound) {
  started_child quick(cmd({"sh", "-c", "exit 3"}));
  int status = 0;
  ASSERT_TRUE(quick.wait_exit(5000ms, &status));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3);

  started_child slow(cmd({"sleep", "30"}));
  const auto begun = std::chrono::steady_clock::now();
  EXPECT_FALSE(slow.wait_exit(200ms, &status));
  EXPECT_LT(std::chrono::steady_clock::now() - begun, 10s) << "bounded, whatever the machine's load";
  slow.abandon();
  ASSERT_EQ(waitpid(slow.pid(), &status, 0), slow.pid());
}
