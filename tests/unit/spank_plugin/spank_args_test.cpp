#include "spank_args.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>

#include "fixture.hpp"
#include "parse.hpp"
#include "run_option_table.hpp"
#include "switch_paths.hpp"

using namespace trainctl;
using std::chrono::milliseconds;

TEST(SpankArgs, SiteArguments) {
  site_settings s;
  apply_site_argument(s, "default_graceful_exit=10");
  EXPECT_EQ(s.default_graceful_exit, milliseconds(600000));
  apply_site_argument(s, "signals=USR1,USR2");
  EXPECT_EQ(s.allowed_signals, (std::vector<int>{SIGUSR1, SIGUSR2}));
  apply_site_argument(s, "shield=no");
  EXPECT_FALSE(s.shield);
  apply_site_argument(s, "supervisor=/opt/trainctl/bin/trainctl-run");
  EXPECT_EQ(s.supervisor, "/opt/trainctl/bin/trainctl-run");
  apply_site_argument(s, "endtime_poll=10s");
  EXPECT_EQ(s.endtime_poll, milliseconds(10000));
  apply_site_argument(s, "default_hang_timeout=auto");
  EXPECT_EQ(s.default_hang_timeout, "auto");
  apply_site_argument(s, "default_hang_timeout=20m");
  EXPECT_EQ(s.default_hang_timeout, "20m");
  apply_site_argument(s, "metrics_dir=/var/lib/prometheus/node-exporter");
  EXPECT_EQ(s.metrics_dir, "/var/lib/prometheus/node-exporter");
  for (const char* bad :
       {"nokey", "=x", "bogus=1", "shield=maybe", "supervisor=relative", "poll_interval=0", "default_graceful_exit=abc",
        "signals=NOPE", "default_hang_timeout=soon", "metrics_dir=relative/dir"})
    EXPECT_THROW(apply_site_argument(s, bad), parse_error) << bad;
  try {
    apply_site_argument(s, "default_hang_timeout=soon");
  } catch (const parse_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("default_hang_timeout: --hang-timeout", 0), 0u) << e.what();
  }
  EXPECT_EQ(s.default_hang_timeout, "20m") << "a bad value leaves the one before";
}

namespace {
// --graceful-exit as the plugin parses it: by the supervisor's own row.
milliseconds check_graceful_exit(const std::string& value) {
  supervisor_options o;
  apply_run_option(run_option_named("--graceful-exit"), o, value);
  return o.graceful_exit;
}
}  // namespace

TEST(SpankArgs, GracefulExitAsTheIssueLists) {
  EXPECT_EQ(check_graceful_exit("10"), milliseconds(600000)) << "a bare number is minutes";
  EXPECT_EQ(check_graceful_exit("90s"), milliseconds(90000));
  EXPECT_EQ(check_graceful_exit("1h"), milliseconds(3600000));
  EXPECT_EQ(check_graceful_exit("auto"), option::kGracefulExitAuto) << "learnt by the supervisor";
  for (const char* bad : {"abc", "0", "-5", "99999h", ""}) {
    try {
      check_graceful_exit(bad);
      ADD_FAILURE() << bad;
    } catch (const parse_error& e) {
      EXPECT_EQ(std::string(e.what()).rfind("--graceful-exit: ", 0), 0u) << e.what();
    }
  }
}

TEST(SpankArgs, GracefulSignalWithinWhatTheSiteAllows) {
  site_settings s;
  EXPECT_EQ(check_graceful_signal("USR2", s), SIGUSR2);
  EXPECT_THROW(check_graceful_signal("NOPE", s), parse_error);
  EXPECT_THROW(check_graceful_signal("KILL", s), parse_error);
  s.allowed_signals = {SIGUSR1};
  EXPECT_THROW(check_graceful_signal("USR2", s), parse_error);
}

TEST(SpankArgs, DefaultSwitchPaths) {
  EXPECT_EQ(default_switch_path("kill-switch", "/scratch/me", "llama 70b/run"),
            "/scratch/me/kill-switch-llama_70b_run");
  EXPECT_EQ(default_switch_path("save-switch", "/x", ""), "/x/save-switch-trainctl");
}

// The plugin and trainctl-run share one definition of each limit (options.hpp).
TEST(SpankArgs, SameLimitsAsTrainctlRun) {
  site_settings s;
  EXPECT_THROW(check_graceful_exit("31d"), parse_error);
  EXPECT_EQ(check_graceful_exit("30d"), option::kGracefulExitMax);
  for (const char* bad : {"poll_interval=50ms", "signals=USR1,SEGV", "default_signal=32", "endtime_poll=100ms"})
    EXPECT_THROW(apply_site_argument(s, bad), parse_error) << bad;
  site_settings open;
  EXPECT_THROW(check_graceful_signal("SEGV", open), parse_error);
}

// srun --help and trainctl_spank(8) show the rows the table offers to the plugin, in its order.
TEST(SpankArgs, PluginOptionsAreTheTablesPluginRows) {
  const auto docs = plugin_option_docs(SIGUSR2);
  std::vector<std::string> rows, shown;
  for (const run_option& r : run_option_table())
    if (r.in_plugin()) rows.push_back(r.bare());
  for (const auto& d : docs) shown.push_back(d.name);
  EXPECT_EQ(shown, rows);
  EXPECT_EQ(shown.front(), "graceful-exit");
  for (const auto& d : docs) {
    const std::string help = d.help, name = d.name;
    if (name == "graceful-signal") {
      EXPECT_NE(help.find("(default USR2)"), std::string::npos) << "the site's default";
    }
    if (name == "kill-switch") {
      EXPECT_TRUE(d.value_optional);
      EXPECT_NE(help.find("exported as KILL_SWITCH"), std::string::npos);
    }
  }
}

// The supervisor's command line: what the site and the plugin resolved first, then the
// options as given by their own rows, and the node state last; the supervisor parses it
// back into the same options.
TEST(SpankArgs, TheSupervisorsArgvIsWrittenByTheOptionRows) {
  site_settings site;
  site.supervisor = "/usr/libexec/trainctl/trainctl-run";
  site.default_hang_timeout = "20m";
  site.metrics_dir = "/var/lib/prometheus/node-exporter";
  std::vector<given_option> given = {{&run_option_named("--graceful-exit"), "auto"},
                                     {&run_option_named("--hang-timeout"), "8m"},
                                     {&run_option_named("--hang-phase-timeout"), "save=30m"}};
  const env_lookup none = [](const char*) { return std::string(); };
  supervisor_options opts = supervisor_options_from(given, none);
  const auto argv = supervisor_argv(site, opts, given, true, "/run/trainctl/1000/job.42");
  ASSERT_GE(argv.size(), 4u);
  EXPECT_EQ(argv[0], site.supervisor);
  EXPECT_EQ(argv[1], "--batch");
  auto has = [&](const std::string& a) { return std::find(argv.begin(), argv.end(), a) != argv.end(); };
  EXPECT_TRUE(has("--graceful-exit=auto"));
  EXPECT_TRUE(has("--hang-timeout=8m")) << "the user's, not the site's default";
  EXPECT_FALSE(has("--hang-timeout=20m"));
  EXPECT_TRUE(has("--hang-phase-timeout=save=30m"));
  EXPECT_TRUE(has("--metrics-dir=/var/lib/prometheus/node-exporter")) << "the site's, none given";
  EXPECT_EQ(argv.back(), "--state=/run/trainctl/1000/job.42");
  // Without a hang timeout no hang is looked for, and a phase timeout is not passed on.
  given = {{&run_option_named("--hang-phase-timeout"), "save=30m"}};
  site.default_hang_timeout.clear();
  opts = supervisor_options{};
  const auto plain = supervisor_argv(site, opts, given, false, "");
  EXPECT_EQ(std::count_if(plain.begin(), plain.end(), [](const std::string& a) { return a.rfind("--hang", 0) == 0; }),
            0);
  EXPECT_NE(plain.back().rfind("--state", 0), 0u);
}

// Every job runs the supervisor: a copy another user could replace is refused.
TEST(SpankArgs, OnlyARootOwnedSupervisorNobodyElseCanWrite) {
  if (getuid() != 0) GTEST_SKIP() << "needs root to own the files";
  trainctl_test::temp_dir t;  // 0700, root's
  const std::string bin = t / "trainctl-run";
  trainctl_test::touch(bin);
  ASSERT_EQ(chmod(bin.c_str(), 0755), 0);
  EXPECT_EQ(untrusted_supervisor(bin), "");
  ASSERT_EQ(chmod(bin.c_str(), 0757), 0);
  EXPECT_NE(untrusted_supervisor(bin).find("writable by group or others (mode 0757)"), std::string::npos);
  ASSERT_EQ(chmod(bin.c_str(), 0755), 0);
  ASSERT_EQ(chown(bin.c_str(), 65534, 65534), 0);
  EXPECT_NE(untrusted_supervisor(bin).find("belongs to uid 65534"), std::string::npos);
  ASSERT_EQ(chown(bin.c_str(), 0, 0), 0);
  ASSERT_EQ(chmod(t.path().c_str(), 0777), 0);  // anyone could rename it away and plant another
  EXPECT_NE(untrusted_supervisor(bin).find("is in " + t.path() + ", which is writable"), std::string::npos);
  ASSERT_EQ(chmod(t.path().c_str(), 01777), 0);  // sticky, like /tmp: only root may rename root's file
  EXPECT_EQ(untrusted_supervisor(bin), "");
  EXPECT_NE(untrusted_supervisor(t / "absent").find("cannot be found"), std::string::npos);
  EXPECT_NE(untrusted_supervisor("relative").find("absolute"), std::string::npos);
}
