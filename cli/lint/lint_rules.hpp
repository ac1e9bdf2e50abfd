// trainctl lint's rules: what in a batch script, checked against the cluster it would run
// on and what its earlier runs measured, would lose work the night it is preempted. One
// row per rule (its name, what it checks); each finding is one line saying what to change.
// Pure: everything it knows comes in a lint_context, so each rule is tested with one script.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "batch_script.hpp"
#include "cluster_config.hpp"
#include "env.hpp"

namespace trainctl {

// What earlier runs of the script (its job name's arrays) measured; 0: nothing seen.
struct run_figures {
  std::int64_t longest_save_ms = 0;
  std::int64_t longest_quiet_ms = 0;           // a training rank's longest time between agreements
  std::int64_t longest_start_ms = 0;           // a task's start to rank 0's first step
  std::map<std::string, std::int64_t> phases;  // each phase the loop marked: its longest
  std::vector<std::string> arrays;             // the jobs (arrays) they came from
};

struct lint_context {
  std::string script;                    // as the user named it, for the lines
  std::optional<cluster_facts> cluster;  // nullopt: the rules on the cluster say nothing
  run_figures measured;
  std::int64_t collective_timeout_ms = 0;  // --collective-timeout; 0: torch's default for the backend
  // Where collective_timeout_ms was read instead, when the user gave none: "train.py:88",
  // the program's own init_process_group. `collective_timeout_unread`: such a call whose
  // timeout lint cannot read (a variable, an expression); the rule then says nothing.
  std::string collective_timeout_from, collective_timeout_unread;
  env_lookup env;  // as the job would see it: SLURM_SUBMIT_DIR (here), SLURM_JOB_NAME
};

struct lint_problem {
  std::string rule;  // the rule's name
  int line = 0;      // the script's line it is about; 0: the command line or the cluster
  std::string text;  // what is wrong and what to change
};

struct lint_result {
  std::vector<lint_problem> problems;
  std::vector<std::string> notes;  // what lint could not tell, and so did not judge
  std::string supervisor;          // "the SPANK plugin", "trainctl-run" or ""
};

struct lint_rule {
  const char* name;    // what a finding names: [lead-shorter-than-save]
  const char* checks;  // what passing it means, one line, for --list-rules and the man page
};
// Every rule.
const std::vector<lint_rule>& lint_rules();

lint_result lint_script(const batch_script& s, const lint_context& ctx);

}  // namespace trainctl
