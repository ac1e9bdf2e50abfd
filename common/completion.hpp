// Shell completion generated from the parsers themselves (kubectl's and gh's habit:
// `trainctl completion bash|zsh|fish`), so it can never miss an option the command has.
// describe_app() (cli_text.hpp) walks a CLI11 parser; the generators here turn the
// walk into a script.
//
// What a value completes to comes from its kind (the names name_values() gives): JOB
// your jobs (squeue --me), NODE the cluster's nodes (sinfo), PATH and DIR files and
// directories; anything else nothing.
#pragma once

#include <string>
#include <vector>

namespace trainctl {

struct completion_option {
  std::vector<std::string> names;  // "--watch", "-w"
  bool takes_value = false;
  std::string kind;  // JOB, PATH, DURATION, ... ("" for a flag)
  std::string help;  // its first sentence, for zsh and fish
};

struct completion_node {
  std::string name, help;
  std::vector<completion_option> options;
  std::vector<std::string> positionals;  // their kinds, in order (JOB, NODE, REASON, command)
  std::vector<completion_node> subs;     // verbs, or a verb's subcommands
};

// The scripts for `prog` (its verbs are root.subs).
std::string bash_completion(const std::string& prog, const completion_node& root);
std::string zsh_completion(const std::string& prog, const completion_node& root);
std::string fish_completion(const std::string& prog, const completion_node& root);

}  // namespace trainctl
