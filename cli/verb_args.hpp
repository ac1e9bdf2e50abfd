// Parsing a verb's arguments with CLI11, the same way for every verb: --help prints and
// exits 0; bad input is one line naming where to read more, and exit 2.
#pragma once
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <string>

#include "cli_text.hpp"
#include "slurm_job.hpp"

namespace trainctl::cli {

// JOB of a verb that looks inside a running job: refused by the parse (one line, exit 2)
// unless it is a job id, before any controller is asked.
inline const CLI::Validator& job_id() {
  static const CLI::Validator v(
      [](std::string& text) {
        return is_job_id(text) ? std::string()
                               : "'" + text.substr(0, 40) + "' is not a job id; accepted: 1234 or 1234_5 (one task)";
      },
      "", "job id");
  return v;
}

// Where SCRIPT is in a verb's `argv` of the form `[OPTIONS] SCRIPT [sbatch options]` (lint,
// drill): the first word that is neither an option nor the value of one of `valued`
// given apart ("--start-timeout 5m"); argc when there is none. The words after it are sbatch's.
inline int script_position(int argc, char** argv, std::initializer_list<const char*> valued) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (std::any_of(valued.begin(), valued.end(), [&](const char* v) { return a == v; })) {
      ++i;
    } else if (a.empty() || a[0] != '-') {
      return i;
    }
  }
  return argc;
}

// The exit status when the verb ends here (help, or bad input), nothing when it goes on.
inline std::optional<int> parse_verb(CLI::App& app, int argc, char** argv, const char* verb) {
  name_values(app);
  if (g_describe != nullptr) {  // `trainctl completion`: the parser, not a command line
    *g_describe = describe_app(app, verb);
    return 0;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "trainctl %s: %s (see trainctl help %s)\n", verb, refusal(app, e.what(), argc, argv).c_str(),
                 verb);
    return 2;
  }
  return std::nullopt;
}

}  // namespace trainctl::cli
