#include "run_option_table.hpp"

#include <gtest/gtest.h>

#include <csignal>
#include <map>
#include <set>

#include "parse.hpp"

using namespace trainctl;
using std::chrono::milliseconds;

namespace {

// A command line's options by name, as trainctl-run's parser hands them over.
supervisor_options from(const std::vector<std::pair<const char*, std::string>>& line,
                        const std::map<std::string, std::string>& env = {}) {
  std::vector<given_option> given;
  for (const auto& [name, value] : line) given.push_back({&run_option_named(name), value});
  return supervisor_options_from(given, [&env](const char* name) {
    const auto it = env.find(name);
    return it != env.end() ? it->second : std::string();
  });
}

std::string refusal(const std::vector<std::pair<const char*, std::string>>& line) {
  try {
    from(line);
  } catch (const parse_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RunOptionTable, EveryRowIsComplete) {
  std::set<std::string> names;
  for (const run_option& r : run_option_table()) {
    const std::string name = r.name;
    EXPECT_EQ(name.rfind("--", 0), 0u) << name;
    EXPECT_TRUE(names.insert(name).second) << name << " is in the table twice";
    EXPECT_GT(std::string(r.help).size(), 10u) << name;
    EXPECT_NE(r.apply, nullptr) << name;
    EXPECT_NE(r.shown_default, nullptr) << name;
    EXPECT_FALSE(r.value_optional() && r.metavar == nullptr) << name << ": a flag has no value to leave out";
    EXPECT_FALSE(r.in_plugin() && r.hidden()) << name << ": srun --help would show a hidden option";
  }
  EXPECT_THROW(run_option_named("--no-such-option"), std::logic_error);
  // The rows the plugin and trainctl-run look up by name (a rename would throw in
  // slurmstepd): every one is in the table.
  for (const char* used :
       {"--batch", "--graceful-exit", "--kill-switch", "--save-switch", "--graceful-signal", "--poll-interval",
        "--endtime-poll", "--launchers", "--no-shield", "--on-notice", "--hang-timeout", "--hang-action",
        "--hang-phase-timeout", "--hang-start-timeout", "--no-progress-runs"})
    EXPECT_NO_THROW(run_option_named(used)) << used;
}

TEST(RunOptionTable, NothingGivenIsTheDefaults) {
  const supervisor_options o = from({});
  const supervisor_options d;
  EXPECT_EQ(o.graceful_exit, d.graceful_exit);
  EXPECT_EQ(o.graceful_signal, SIGUSR1);
  EXPECT_EQ(o.shield, (std::vector<int>{SIGTERM, SIGUSR1}));
  EXPECT_EQ(o.hang.timeout, milliseconds(0));
  EXPECT_EQ(o.hang.start_timeout, milliseconds(0));
  EXPECT_TRUE(o.kill_switch.empty());
}

TEST(RunOptionTable, EachRowFillsItsField) {
  const supervisor_options o = from({{"--graceful-exit", "10"},
                                     {"--deadline", "1700000000"},
                                     {"--graceful-signal", "USR2"},
                                     {"--poll-interval", "2s"},
                                     {"--endtime-poll", "1m"},
                                     {"--launchers", "myrun,,other"},
                                     {"--batch", ""},
                                     {"--on-notice", "./notify.sh"},
                                     {"--on-notice-timeout", "30s"},
                                     {"--hang-timeout", "20m"},
                                     {"--hang-phase-timeout", "eval=1h"},
                                     {"--hang-action", "save-exit"},
                                     {"--log-dir", "/scratch/logs"},
                                     {"--no-progress-runs", "0"},
                                     {"--state", "/run/x"},
                                     {"--notice-signals", "XCPU,TERM"}});
  EXPECT_EQ(o.graceful_exit, milliseconds(600000)) << "a bare number is minutes";
  EXPECT_EQ(o.deadline, 1700000000.0);
  EXPECT_EQ(o.graceful_signal, SIGUSR2);
  EXPECT_EQ(o.shield, (std::vector<int>{SIGTERM, SIGUSR1, SIGUSR2})) << "the graceful signal is shielded too";
  EXPECT_EQ(o.poll_interval, milliseconds(2000));
  EXPECT_EQ(o.endtime_poll, milliseconds(60000));
  EXPECT_EQ(o.launchers.back(), "other");
  EXPECT_EQ(o.launchers[o.launchers.size() - 2], "myrun");
  EXPECT_TRUE(o.batch);
  EXPECT_EQ(o.on_notice, "./notify.sh");
  EXPECT_EQ(o.on_notice_timeout, milliseconds(30000));
  EXPECT_EQ(o.hang.timeout, milliseconds(20 * 60000));
  EXPECT_EQ(o.hang.start_timeout, milliseconds(60 * 60000)) << "3 times --hang-timeout";
  EXPECT_EQ(o.hang.phase_timeouts.at("eval"), milliseconds(3600000));
  EXPECT_EQ(o.hang.action, hang_action::save_exit);
  EXPECT_EQ(o.log_dir, "/scratch/logs");
  EXPECT_EQ(o.no_progress_runs, 0);
  EXPECT_EQ(o.state_path, "/run/x");
  EXPECT_EQ(o.notices, (std::vector<int>{SIGTERM, SIGUSR1, SIGUSR2, SIGXCPU})) << "added to the defaults, once each";
}

TEST(RunOptionTable, RulesThatJoinOptions) {
  EXPECT_TRUE(from({{"--shield", "TERM"}, {"--no-shield", ""}}).shield.empty()) << "--no-shield wins";
  EXPECT_EQ(from({{"--hang-timeout", "1m"}}).hang.start_timeout, milliseconds(10 * 60000)) << "at least 10m";
  EXPECT_EQ(from({{"--hang-timeout", "auto"}}).hang.start_timeout, milliseconds(30 * 60000));
  EXPECT_EQ(from({{"--hang-timeout", "1m"}, {"--hang-start-timeout", "2m"}}).hang.start_timeout,
            milliseconds(2 * 60000));
  EXPECT_EQ(refusal({{"--hang-phase-timeout", "eval=1h"}}),
            "--hang-phase-timeout needs --hang-timeout (a duration or auto): without it no hang is looked for");
  EXPECT_EQ(refusal({{"--hang-timeout", "5m"}, {"--hang-start-timeout", "auto"}}),
            "--hang-start-timeout: 'auto' is for --hang-timeout only; accepted: a duration such as 20m, or off");
  EXPECT_EQ(refusal({{"--hang-start-timeout", "soon"}}).rfind("--hang-start-timeout: ", 0), 0u)
      << refusal({{"--hang-start-timeout", "soon"}});
}

TEST(RunOptionTable, ASwitchGivenBareIsTheVariableElseTheDefaultPath) {
  const std::map<std::string, std::string> job{{"SLURM_SUBMIT_DIR", "/home/me"}, {"SLURM_JOB_NAME", "llama"}};
  EXPECT_EQ(from({{"--kill-switch", ""}}, job).kill_switch, "/home/me/kill-switch-llama");
  auto with_var = job;
  with_var["SAVE_SWITCH"] = "/scratch/save-now";
  EXPECT_EQ(from({{"--save-switch", ""}}, with_var).save_switch, "/scratch/save-now");
  EXPECT_EQ(from({}, with_var).save_switch, "/scratch/save-now") << "not given: what the environment says";
  EXPECT_EQ(from({{"--kill-switch", "/x/stop"}}, job).kill_switch, "/x/stop");
  EXPECT_EQ(refusal({{"--kill-switch", "a\nb"}}), "--kill-switch: the path contains a newline");
}

// Each refusal is one line that names the option and says what is accepted.
TEST(RunOptionTable, EveryBadValueNamesItsOption) {
  for (const auto& [name, bad] : std::vector<std::pair<const char*, const char*>>{{"--graceful-exit", "soon"},
                                                                                  {"--deadline", "tomorrow"},
                                                                                  {"--graceful-signal", "KILL"},
                                                                                  {"--shield", "SEGV"},
                                                                                  {"--poll-interval", "1ms"},
                                                                                  {"--endtime-poll", "x"},
                                                                                  {"--on-notice", "a\nb"},
                                                                                  {"--on-notice-timeout", "2h"},
                                                                                  {"--hang-timeout", "never"},
                                                                                  {"--hang-phase-timeout", "eval"},
                                                                                  {"--hang-action", "panic"},
                                                                                  {"--no-progress-runs", "-1"},
                                                                                  {"--notice-signals", "KILL"}}) {
    const std::string line = refusal({{"--hang-timeout", "5m"}, {name, bad}});
    EXPECT_EQ(line.rfind(std::string(name) + ": ", 0), 0u) << name << " " << bad << ": " << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  }
}
