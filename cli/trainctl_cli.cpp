// trainctl VERB [ARGS]: one command for what users do with trainctl, with git's and
// kubectl's conventions: `trainctl --help` lists the verbs, `trainctl help VERB` (or
// `trainctl VERB --help`) tells one. Each verb is a file of cmd/.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "did_you_mean.hpp"
#include "trainctl/trainctl.h"
#include "verbs.hpp"

namespace trainctl::cli {

const std::vector<verb_entry>& verb_table() {
  static const std::vector<verb_entry> verbs = {
      {"run", trainctl::cli::verb_run,
       "run a command (torchrun, accelerate, your program) so time limits and preemption reach its ranks"},
      {"status", trainctl::cli::verb_status,
       "every rank of a running job: step, speed, memory; its deadline, switches, notices (--watch, --json)"},
      {"stacks", trainctl::cli::verb_stacks, "every rank's stacks of a running job, and where they are stuck"},
      {"report", trainctl::cli::verb_report,
       "where a job array's node-hours went: each task's start-up, saves, lost work; goodput; a timeline (SVG)"},
      {"bad-nodes", trainctl::cli::verb_bad_nodes,
       "the nodes your next task keeps off: list, mark NODE REASON, forget NODE"},
      {"lint", trainctl::cli::verb_lint,
       "check a batch script against the cluster and its earlier runs before the long run, one line per problem"},
      {"drill", trainctl::cli::verb_drill,
       "rehearse a save, a hang, the deadline, the resume and a crash on your script, in a few minutes"},
      {"version", trainctl::cli::verb_version, "print trainctl's version"},
      {"completion", trainctl::cli::verb_completion,
       "the completion script for bash, zsh or fish, from the parsers (source <(trainctl completion bash))"},
  };
  return verbs;
}

}  // namespace trainctl::cli

namespace {

using verb = trainctl::cli::verb_entry;

const verb* find_verb(const char* name) {
  for (const verb& v : trainctl::cli::verb_table())
    if (std::strcmp(v.name, name) == 0) return &v;
  return nullptr;
}

void usage(std::FILE* to) {
  std::fprintf(to,
               "Keeps ML training runs on SLURM alive through time limits, preemption and hangs.\n"
               "Usage: trainctl VERB [ARGS...]\n\nVerbs:\n");
  for (const verb& v : trainctl::cli::verb_table()) std::fprintf(to, "  %-10s %s\n", v.name, v.summary);
  std::fprintf(to,
               "\n`trainctl help VERB` or `trainctl VERB --help` tells one verb. trainctl-run is `trainctl run`\n"
               "under its old name (the SPANK plugin runs every task under it); trainwatch runs the watchdogs.\n");
}

std::string accepted() {
  std::string out;
  for (const verb& v : trainctl::cli::verb_table()) out += std::string(out.empty() ? "" : ", ") + v.name;
  return out + ", help";
}

// " (did you mean 'status'?)" for a mistyped verb, as git and kubectl say it.
std::string suggestion(const char* typed) {
  std::vector<std::string> names{"help"};
  for (const verb& v : trainctl::cli::verb_table()) names.emplace_back(v.name);
  const std::string best = trainctl::closest_word(typed, names);
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

int dispatch(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const std::string first = argv[1];
  if (first == "-h" || first == "--help" || (first == "help" && argc == 2)) {
    usage(stdout);
    return 0;
  }
  if (first == "--version") return trainctl::cli::verb_version(1, argv + 1);
  if (first == "help") {
    const verb* v = find_verb(argv[2]);
    if (v == nullptr || argc > 3) {
      std::fprintf(stderr, "trainctl help: '%s' is not a verb%s; accepted: %s\n", argv[2], suggestion(argv[2]).c_str(),
                   accepted().c_str());
      return 2;
    }
    char help[] = "--help";
    char* args[] = {argv[2], help, nullptr};
    return v->run(2, args);
  }
  const verb* v = find_verb(argv[1]);
  if (v == nullptr) {
    std::fprintf(stderr, "trainctl: '%s' is not a verb%s; accepted: %s (trainctl --help)\n", argv[1],
                 suggestion(argv[1]).c_str(), accepted().c_str());
    return 2;
  }
  return v->run(argc - 1, argv + 1);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dispatch(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainctl: %s\n", e.what());
    return 1;
  }
}
