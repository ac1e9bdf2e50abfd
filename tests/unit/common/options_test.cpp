// The shared option definitions: one default and one set of limits for the plugin,
// trainctl-run and the library.
#include "options.hpp"

#include <gtest/gtest.h>

#include <csignal>

using namespace trainctl;
using namespace std::chrono_literals;

TEST(NoticeSignals, TheUsualNoticesAreAccepted) {
  for (const char* s : {"USR1", "SIGUSR2", "term", "HUP", "INT", "URG", "WINCH", "XCPU"})
    EXPECT_NO_THROW(option::parse_notice_signal(s)) << s;
  EXPECT_EQ(option::parse_notice_signal(std::to_string(SIGRTMIN)), SIGRTMIN);
  EXPECT_EQ(option::parse_notice_signal(std::to_string(SIGRTMAX)), SIGRTMAX);
}

// TRAINCTL_SIGNALS=11 turned a segfault into an endless loop (the handler returned to
// the faulting instruction); 32 was accepted but glibc keeps it, so it never arrived.
TEST(NoticeSignals, FaultJobControlAndLibcSignalsAreRefused) {
  for (const char* s : {"SEGV", "11", "BUS", "ILL", "FPE", "ABRT", "TRAP", "SYS", "KILL", "STOP", "TSTP", "CONT",
                        "CHLD", "PIPE", "32", "33", "TTIN"}) {
    try {
      option::parse_notice_signal(s);
      ADD_FAILURE() << s << " was accepted";
    } catch (const parse_error& e) {
      EXPECT_NE(std::string(e.what()).find("accepted: HUP"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(option::parse_notice_signal_list("USR1,SEGV"), parse_error);
  EXPECT_TRUE(option::parse_notice_signal_list("none").empty());
}

TEST(PollInterval, OneFloorAndCeiling) {
  EXPECT_EQ(option::parse_poll_interval("100ms"), 100ms);
  EXPECT_EQ(option::parse_poll_interval("1h"), 1h);
  EXPECT_THROW(option::parse_poll_interval("99ms"), parse_error);
  EXPECT_THROW(option::parse_poll_interval("61m"), parse_error);
  EXPECT_EQ(option::kPollIntervalDefault, 10s);
}

TEST(GracefulExit, ThirtyDaysAtMostBareNumberIsMinutes) {
  EXPECT_EQ(option::parse_graceful_exit("10"), 10min);
  EXPECT_EQ(option::parse_graceful_exit("30d"), option::kGracefulExitMax);
  EXPECT_THROW(option::parse_graceful_exit("31d"), parse_error);
  EXPECT_THROW(option::parse_graceful_exit("0"), parse_error);
  EXPECT_EQ(option::parse_graceful_exit("auto"), option::kGracefulExitAuto);
  try {
    option::parse_graceful_exit("soon");
    FAIL() << "soon was accepted";
  } catch (const parse_error& e) {
    EXPECT_NE(std::string(e.what()).find(", or auto"), std::string::npos) << e.what();
  }
}

TEST(EndtimePoll, BoundsAndDefault) {
  EXPECT_EQ(option::parse_endtime_poll("10s"), 10s);
  EXPECT_THROW(option::parse_endtime_poll("500ms"), parse_error);
  EXPECT_THROW(option::parse_endtime_poll("25h"), parse_error);
  EXPECT_EQ(option::kEndtimePollDefault, 5min);
}

TEST(OnNotice, OneLineOfShellAndASaneTimeLimit) {
  EXPECT_EQ(option::check_on_notice("./hook.sh $SLURM_JOB_ID"), "./hook.sh $SLURM_JOB_ID");
  EXPECT_EQ(option::check_on_notice(""), "");
  EXPECT_THROW(option::check_on_notice("a\nb"), parse_error);
  EXPECT_THROW(option::check_on_notice("  "), parse_error);
  EXPECT_THROW(option::check_on_notice(std::string(4096, 'x')), parse_error);
  EXPECT_EQ(option::parse_on_notice_timeout("90"), 90s);
  EXPECT_THROW(option::parse_on_notice_timeout("500ms"), parse_error);
  EXPECT_THROW(option::parse_on_notice_timeout("2h"), parse_error);
  try {
    option::parse_on_notice_timeout("soon");
    ADD_FAILURE() << "accepted 'soon'";
  } catch (const parse_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--on-notice-timeout: ", 0), 0u) << e.what();
  }
}

TEST(HangOptions, AutoAndPhaseBudgets) {
  EXPECT_EQ(option::parse_hang_timeout("auto"), option::kHangTimeoutAuto);
  EXPECT_EQ(option::parse_hang_timeout("off").count(), 0);
  const auto p = option::parse_hang_phase_timeout("save=20m,eval=90s,my.phase-2=1");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[0].first, "save");
  EXPECT_EQ(p[0].second, std::chrono::minutes(20));
  EXPECT_EQ(p[1].second, std::chrono::seconds(90));
  EXPECT_EQ(p[2].first, "my.phase-2");
  EXPECT_EQ(p[2].second, std::chrono::minutes(1)) << "a bare number is minutes";
  for (const char* bad :
       {"", "eval", "=5m", "eval=", "eval=0", "eval=5m,eval=6m", "a/b=5m", "-x=5m", "eval=5m,", "eval=8d"})
    EXPECT_THROW(option::parse_hang_phase_timeout(bad), parse_error) << bad;
  try {
    option::parse_hang_phase_timeout("eval");
  } catch (const parse_error& e) {
    EXPECT_NE(std::string(e.what()).find("--hang-phase-timeout: 'eval'; accepted: NAME=DURATION"), std::string::npos)
        << e.what();
  }
}
