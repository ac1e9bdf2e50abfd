// The plugin's site settings (plugstack.conf arguments) and the validation of its
// user options. Plain C++ with no SLURM dependency, so tests and fuzzers can use it.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "options.hpp"
#include "run_option_table.hpp"

namespace trainctl {

struct site_settings {
  std::chrono::milliseconds default_graceful_exit{0};  // 0: none unless the user asks
  std::string default_hang_timeout;                    // --hang-timeout's value unless the user gives one
  std::string metrics_dir;                             // --metrics-dir's value unless the user gives one
  std::vector<int> allowed_signals;                    // graceful signals a user may pick
  int default_signal = 0;                              // SIGUSR1 unless set
  std::string launchers;                               // extra names, comma separated
  std::chrono::milliseconds poll_interval = option::kPollIntervalDefault;
  std::chrono::milliseconds endtime_poll = option::kEndtimePollDefault;
  bool shield = true;
  bool always = false;     // supervise every task, even without options
  std::string supervisor;  // trainctl-run
};

// Applies one "key=value" plugstack.conf argument; throws parse_error naming the key,
// the value and what is accepted.
void apply_site_argument(site_settings& s, const std::string& arg);

// The site's rule on --graceful-signal (signals=), beyond the option's own parse
// (run_option_table): throws parse_error with one line that names the option.
int check_graceful_signal(const std::string& value, const site_settings& s);

// The plugin's user options, the rows of run_option_table it offers, in the table's
// order (srun --help lists them so): the name without "--", the word for its value, whether
// the value may be left out (a switch's default path), and the help text (the row's, with
// what the plugin adds; `default_signal` is the site's). srun --help and the generated
// trainctl_spank(8) both show these.
struct plugin_option_doc {
  const char* name;
  const char* value;
  bool value_optional;
  std::string help;
};
std::vector<plugin_option_doc> plugin_option_docs(int default_signal);

// The supervisor's command line for a task: what the site sets or the plugin resolved
// (the graceful exit, the switches' paths, the signal, the intervals, the site's
// defaults), then every other option as given, each written by its option-table row,
// then the node state's path (`state`, "" for none). argv[0] is site.supervisor.
std::vector<std::string> supervisor_argv(const site_settings& site, const supervisor_options& opts,
                                         const std::vector<given_option>& given, bool batch, const std::string& state);

// Why the plugin must not run `path` as every user's supervisor ("" when it may): the
// file and every directory above it must belong to root and be writable by nobody
// else (a root-owned sticky directory such as /tmp is fine), or any user who could
// replace it would run code in every job.
std::string untrusted_supervisor(const std::string& path);

}  // namespace trainctl
