// The verbs of the trainctl command, one file each in cmd/ (as git's builtin/). Each
// gets the arguments after its name (argv[0] is the verb) and returns the exit status.
// They call the libraries and the supervisor's code, never each other.
#pragma once

#include <vector>

namespace trainctl::cli {

struct verb_entry {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
};
// The verbs, in the order `trainctl --help` lists them.
const std::vector<verb_entry>& verb_table();

int verb_run(int argc, char** argv);
int verb_status(int argc, char** argv);
int verb_stacks(int argc, char** argv);
int verb_report(int argc, char** argv);
int verb_lint(int argc, char** argv);
int verb_drill(int argc, char** argv);
int verb_bad_nodes(int argc, char** argv);
int verb_version(int argc, char** argv);
int verb_completion(int argc, char** argv);

}  // namespace trainctl::cli
