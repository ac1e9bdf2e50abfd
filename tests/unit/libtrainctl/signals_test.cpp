#include "signals.hpp"

#include <csignal>

#include "fixture.hpp"
#include "trainctl/controller.hpp"

using namespace trainctl;
using trainctl_test::temp_dir;

namespace {
volatile sig_atomic_t g_user_handler_calls = 0;
void user_handler(int) { g_user_handler_calls = g_user_handler_calls + 1; }

sighandler_t current(int sig) {
  struct sigaction sa {};
  sigaction(sig, nullptr, &sa);
  return sa.sa_handler;
}
}  // namespace

TEST(Signals, HandlerSetsAFlagInsteadOfKilling) {
  signal(SIGUSR1, SIG_DFL);
  install_notice_handlers({SIGUSR1});
  raise(SIGUSR1);  // would end the test process with the default action
  EXPECT_NE(g_signals_seen.load() & (1ull << (SIGUSR1 - 1)), 0u);
  remove_notice_handlers({SIGUSR1});
  EXPECT_EQ(current(SIGUSR1), SIG_DFL) << "the default is restored on close";
}

TEST(Signals, ChainsToTheHandlerInstalledBefore) {
  signal(SIGUSR2, user_handler);
  g_user_handler_calls = 0;
  install_notice_handlers({SIGUSR2});
  raise(SIGUSR2);
  EXPECT_EQ(g_user_handler_calls, 1);
  remove_notice_handlers({SIGUSR2});
  EXPECT_EQ(current(SIGUSR2), user_handler);
  signal(SIGUSR2, SIG_DFL);
}

TEST(Signals, ANewerHandlerIsLeftInPlaceOnClose) {
  signal(SIGUSR2, SIG_DFL);
  install_notice_handlers({SIGUSR2});
  signal(SIGUSR2, user_handler);  // someone installs theirs after us
  remove_notice_handlers({SIGUSR2});
  EXPECT_EQ(current(SIGUSR2), user_handler);
  signal(SIGUSR2, SIG_DFL);
}

TEST(Signals, NestedInstallsRestoreOnlyAtTheLast) {
  signal(SIGHUP, SIG_DFL);
  install_notice_handlers({SIGHUP});
  install_notice_handlers({SIGHUP});
  remove_notice_handlers({SIGHUP});
  EXPECT_NE(current(SIGHUP), SIG_DFL);
  remove_notice_handlers({SIGHUP});
  EXPECT_EQ(current(SIGHUP), SIG_DFL);
}

TEST(Signals, KillAndStopCannotBeCaught) {
  auto failed = install_notice_handlers({SIGKILL, SIGSTOP});
  EXPECT_EQ(failed.size(), 2u);
}

TEST(Signals, ControllerReportsTheSignalAsItsReason) {
  temp_dir t;
  config c;
  c.set("state_path", t / "state");
  c.set("signals", "USR1");
  controller ctl(c);
  EXPECT_FALSE(ctl.should_exit());
  raise(SIGUSR1);
  EXPECT_TRUE(ctl.should_exit());
  EXPECT_EQ(ctl.check(0).reason, "signal");
}

// A supervised rank past its loop ignores a late relay (USR1/USR2) rather than die of it;
// TERM keeps its default (the job's end), and so does a signal someone handles.
TEST(Signals, LateNoticesAreIgnoredWhereTheDefaultWouldKill) {
  signal(SIGUSR1, SIG_DFL);
  signal(SIGUSR2, user_handler);
  install_notice_handlers({SIGUSR1, SIGUSR2, SIGTERM});
  remove_notice_handlers({SIGUSR1, SIGUSR2, SIGTERM});
  ignore_late_notices({SIGUSR1, SIGUSR2, SIGTERM});
  EXPECT_EQ(current(SIGUSR1), SIG_IGN);
  EXPECT_EQ(current(SIGUSR2), user_handler);
  EXPECT_EQ(current(SIGTERM), SIG_DFL);
  raise(SIGUSR1);  // would end the test process with the default action
  signal(SIGUSR1, SIG_DFL);
  signal(SIGUSR2, SIG_DFL);
}
