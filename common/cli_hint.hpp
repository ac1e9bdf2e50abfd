// What to add to CLI11's one line when it refuses a command line: the flag or the
// subcommand the user most likely meant (closest_word), as git and kubectl do.
#pragma once
#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>
#include <vector>

#include "did_you_mean.hpp"

namespace trainctl {

// " (did you mean --graceful-exit?)" for the first --flag of argv (before a "--") that
// `error` names and that neither the app nor its parsed subcommand (any, where none
// was parsed) knows; "" when none is close.
inline std::string flag_hint(const CLI::App& app, const std::string& error, int argc, char** argv) {
  std::vector<std::string> known;
  const auto add = [&known](const CLI::App* a) {
    for (const CLI::Option* o : a->get_options())
      for (const auto& name : o->get_lnames()) known.push_back("--" + name);
  };
  add(&app);
  auto subs = app.get_subcommands([](const CLI::App* s) { return s->parsed(); });
  if (subs.empty()) subs = app.get_subcommands([](const CLI::App*) { return true; });
  for (const CLI::App* s : subs) add(s);
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (word.compare(0, 2, "--") != 0) continue;
    const std::string name = word.substr(0, word.find('='));
    if (std::find(known.begin(), known.end(), name) != known.end() || error.find(name) == std::string::npos) continue;
    const std::string best = closest_word(name, known);
    if (!best.empty()) return " (did you mean " + best + "?)";
  }
  return "";
}

// Where no subcommand was parsed: "'job-runing' is not a check (did you mean
// 'job-running'?); accepted: ..." for the first word of argv that names none, "" when
// there is no such word. A word right after an option without "=" may be its value and
// is passed over.
inline std::string subcommand_hint(const CLI::App& app, int argc, char** argv, const std::string& what) {
  if (!app.get_subcommands([](const CLI::App* s) { return s->parsed(); }).empty()) return "";
  std::vector<std::string> names;
  std::string accepted;
  for (const CLI::App* s : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(s->get_name());
    accepted += (accepted.empty() ? "" : ", ") + s->get_name();
  }
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i], before = i > 1 ? argv[i - 1] : "";
    if (word == "--") break;
    if (word.empty() || word[0] == '-' ||
        (!before.empty() && before[0] == '-' && before.find('=') == std::string::npos))
      continue;
    const std::string best = closest_word(word, names);
    return "'" + word + "' is not " + what + (best.empty() ? "" : " (did you mean '" + best + "'?)") +
           "; accepted: " + accepted;
  }
  return "";
}

}  // namespace trainctl
