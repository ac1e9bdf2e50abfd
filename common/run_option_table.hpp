// The supervisor's options, one row each: the name, the word for its value, the help,
// who offers it, and the parse that fills supervisor_options. trainctl-run's command
// line (CLI11), its --help and completion, the SPANK plugin's options for srun, sbatch
// and salloc, srun --help, trainctl_spank(8) and the argv the plugin starts the
// supervisor with are all made from this table, as git's `struct option` array serves
// each command. A new option is one row here plus the code that reads its field.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "env.hpp"
#include "run_options.hpp"

namespace trainctl {

struct run_option {
  // Who shows the option. Every row is trainctl-run's; kPlugin rows are offered by the
  // plugin too (without the dashes: srun --graceful-exit=10); kHidden rows are left out
  // of --help and completion (plumbing between the plugin and the supervisor).
  enum offered { kRun = 0, kPlugin = 1, kHidden = 2 };

  const char* name;     // "--graceful-exit"
  const char* metavar;  // "DURATION|auto"; nullptr: a flag that takes no value
  // A switch's variable (KILL_SWITCH): the option may be given bare, and then names
  // this variable's path if set, else its default path; the plugin exports the path as
  // it. nullptr: the option takes its value, if any, every time.
  const char* bare_var;
  int offered_by;    // kRun, or kPlugin or kHidden
  const char* help;  // one sentence and its details, no default
  // The default --help shows as "(default ...)", or "" where the help says it.
  std::string (*shown_default)();
  // Checks `value` (empty for a flag, or an optional value given bare) and stores it in
  // `o`; throws parse_error with what was wrong and what is accepted.
  void (*apply)(supervisor_options& o, const std::string& value);

  const char* bare() const { return name + 2; }  // "graceful-exit"
  bool value_optional() const { return bare_var != nullptr; }
  std::string with(const std::string& value) const;  // "--graceful-exit=VALUE"
  bool in_plugin() const { return (offered_by & kPlugin) != 0; }
  bool hidden() const { return (offered_by & kHidden) != 0; }
};

// Every row, in the order --help lists them.
const std::vector<run_option>& run_option_table();

// The row named `name` ("--hang-timeout"), for the code that reads or passes on one
// option by name; a name no row has is a programming error (std::logic_error).
const run_option& run_option_named(std::string_view name);

// The supervisor's --adopt=PID: the plugin's own plumbing, not an option of what the
// supervisor does (its process is in no supervisor_options field).
inline constexpr const char* kAdoptFlag = "--adopt";
// With --adopt, the batch script's: the descriptor its child waits on for the run id
// (run_identity.hpp) before it becomes the script.
inline constexpr const char* kRunIdFdFlag = "--adopt-run-id-fd";

// `row.apply`, with the option's name in front of what its parse says was wrong.
void apply_run_option(const run_option& row, supervisor_options& o, const std::string& value);

// One option as a command line gave it: its row and its text ("" for a flag or a bare value).
struct given_option {
  const run_option* row;
  std::string value;
};
bool is_given(const std::vector<given_option>& given, std::string_view name);

// The options a command line gave, applied in the table's order, then the rules that
// join several: the graceful signal is shielded too; --hang-start-timeout's default
// comes from --hang-timeout; --hang-phase-timeout needs --hang-timeout; a switch given
// bare is $KILL_SWITCH (or $SAVE_SWITCH) if set, else its default path, and one not
// given is whatever that variable says. Throws parse_error (one line naming the option).
supervisor_options supervisor_options_from(const std::vector<given_option>& given, const env_lookup& env);

}  // namespace trainctl
