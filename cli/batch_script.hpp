// A batch script as `trainctl lint` reads it: its #SBATCH options, the trainctl-run
// commands in its body and the shell variables their values name. Read as text, never
// run: a value built by a command ($(...), `...`) or from a variable the script and the
// environment do not give is marked unknown, and the rules that need it say nothing.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "env.hpp"
#include "run_options.hpp"

namespace trainctl {

// One option as sbatch or trainctl-run would see it: "--time" and "4:00:00".
struct script_option {
  std::string name;   // the long name with its dashes ("-t" is "--time")
  std::string value;  // as the shell would expand it ("" when given bare)
  bool has_value = false;
  bool known = true;  // false: the value depends on what lint cannot know
  int line = 0;       // 1-based; 0: given on lint's own command line
};

struct batch_script {
  // #SBATCH lines, then sbatch's input variables (SBATCH_TIMELIMIT...), then lint's
  // command line: the last of a name wins, as in sbatch.
  std::vector<script_option> sbatch;
  std::vector<std::vector<script_option>> runs;  // each trainctl-run command's options
  std::vector<bool> run_is_batch;                // that command has --batch (it wraps the script)
  // Lines of code (not comments) that name a checkpoint directory, and whether any of
  // them varies by array task (SLURM_ARRAY_TASK_ID, %a).
  std::vector<int> checkpoint_lines;
  bool checkpoint_per_task = false;
  // The paths those lines give (an option's value, an assignment's, a word with a '/' or
  // a '$'), as this environment makes them: (line, path; "" when it cannot be known).
  std::vector<std::pair<int, std::string>> checkpoint_paths;

  // The Python programs its commands run (a word ending in .py, as this environment makes
  // it; relative to the submit directory when not absolute): (line, path), each once.
  std::vector<std::pair<int, std::string>> programs;
  // The last value given for sbatch option `name` (long form), or nullptr.
  const script_option* last(const std::string& name) const;
};

// The text of the script at `path`: a regular file of at most 1 MiB, opened so that a
// FIFO cannot block; "" with *why (one line) when it cannot be read or is none.
std::string read_script_file(const std::string& path, std::string* why);

// The words of `text` as sbatch reads option lines: whitespace-separated, quotes
// removed, a word starting with '#' ends the line.
std::vector<std::string> option_words(const std::string& text);

// `args` (long or short sbatch options, as on sbatch's command line) as options;
// `line` is stamped on each. An unknown option that takes a value keeps it. Returns
// "" or one line naming what could not be read.
std::string parse_sbatch_args(const std::vector<std::string>& args, int line, std::vector<script_option>* out);

// Reads `text`: nullopt with *why when it is not a batch script (sbatch wants "#!" on
// its first line). `cli_args` are the sbatch options lint was given (they win, as
// sbatch's own command line does). `env`: the submitting shell's environment, which
// sbatch passes on, with SLURM_SUBMIT_DIR set; SLURM_JOB_NAME is the job's name
// (--job-name, else `file_name`, as sbatch names it). Other SLURM_ variables are unknown.
std::optional<batch_script> read_batch_script(const std::string& text, const std::string& file_name,
                                              const std::vector<std::string>& cli_args, const env_lookup& env,
                                              std::string* why);

// The job's name as sbatch gives it: --job-name, else the script's file name.
std::string job_name_of(const batch_script& s, const std::string& file_name);

// What trainctl runs the script under: the plugin's options (#SBATCH lines and the command
// line), else those of its trainctl-run around the step (not --batch's own), parsed by
// the supervisor's own option table.
struct script_supervision {
  std::string supervisor;  // "the SPANK plugin", "trainctl-run", or "" (neither)
  supervisor_options options;
  std::map<std::string, int> line_of;               // each option given: its line
  std::set<std::string> unknown;                    // options whose value cannot be known here, or is bad
  std::vector<std::pair<int, std::string>> errors;  // (line, what is wrong): the job would fail at its start
  bool misspelt = false;                            // an option trainctl-run does not have
};
script_supervision supervision_of(const batch_script& s, const env_lookup& env);

}  // namespace trainctl
