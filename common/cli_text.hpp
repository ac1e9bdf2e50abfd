// What trainctl's command lines tell a user beyond CLI11's own words: the kind of value
// each option takes in --help (DURATION, PATH, JOB, ... where CLI11 says TEXT), and the
// flag or subcommand a refused command line most likely meant (closest_word), as git
// and kubectl say it.
#pragma once
#include <CLI/CLI.hpp>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "completion.hpp"
#include "did_you_mean.hpp"

namespace trainctl {

// The long options `app` and its parsed subcommand (any, where none was parsed) know.
inline std::vector<std::string> known_flags(const CLI::App& app) {
  std::vector<std::string> known;
  const auto add = [&known](const CLI::App* a) {
    for (const CLI::Option* o : a->get_options())
      for (const auto& name : o->get_lnames()) known.push_back("--" + name);
  };
  add(&app);
  auto subs = app.get_subcommands([](const CLI::App* s) { return s->parsed(); });
  if (subs.empty()) subs = app.get_subcommands([](const CLI::App*) { return true; });
  for (const CLI::App* s : subs) add(s);
  return known;
}

// The first --flag of argv (before a "--") that none of known_flags names, without its
// "=value"; "" when there is none.
inline std::string first_unknown_flag(const CLI::App& app, int argc, char** argv) {
  const std::vector<std::string> known = known_flags(app);
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (word.size() <= 2 || word.compare(0, 2, "--") != 0) continue;
    std::string name = word.substr(0, word.find('='));
    if (std::find(known.begin(), known.end(), name) == known.end()) return name;
  }
  return "";
}

// The line for a command line CLI11 refused: an option nobody knows comes first, as
// GNU tools and git say it ("unknown option --graceful-exti (did you mean
// --graceful-exit?)"), whatever CLI11 stumbled on; else CLI11's own words.
inline std::string refusal(const CLI::App& app, const std::string& error, int argc, char** argv) {
  const std::string unknown = first_unknown_flag(app, argc, argv);
  if (unknown.empty()) return error;
  const std::string best = closest_word(unknown, known_flags(app));
  return "unknown option " + unknown + (best.empty() ? "" : " (did you mean " + best + "?)");
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

// Names the value of every option of `app` and its subcommands that CLI11 would show
// as TEXT, by the option's name: one word per kind, the same in every tool (an option
// whose value is free text keeps TEXT). Call it once the options are added.
inline void name_values(CLI::App& app) {
  static const std::pair<const char*, const char*> kinds[] = {
      {"graceful-exit", "DURATION|auto"},
      {"deadline", "UNIXTIME"},
      {"kill-switch", "PATH"},
      {"save-switch", "PATH"},
      {"graceful-signal", "SIGNAL"},
      {"shield", "SIGNALS"},
      {"launchers", "NAMES"},
      {"on-notice", "COMMAND"},
      {"on-stall", "COMMAND"},
      {"hang-action", "alert|save-exit|end-step"},
      {"hang-phase-timeout", "NAME=DURATION,..."},
      {"log-dir", "DIR"},
      {"state-dir", "DIR"},
      {"stacks-of", "JOB"},
      {"cap", "N"},
      {"no-progress-runs", "N"},
      {"svg", "PATH"},
      {"notify", "SINK"},
      {"notify-file", "PATH"},
      {"textfile", "PATH"},
      {"save-marker", "PATH"},
      {"file", "PATH"},
      {"path", "GLOB"},
      {"job-name", "NAME"},
      {"job", "NAME"},
      {"check", "NAME"},
      {"target", "NAME"},
      {"user", "USER"},
      {"min-available", "SIZE|PCT"},
      {"warn-available", "SIZE|PCT"},
      {"status", "ok|warning|critical|unknown"},
  };
  static const char* const durations[] = {"poll-interval",      "endtime-poll",    "on-notice-timeout", "hang-timeout",
                                          "hang-start-timeout", "expiry",          "interval",          "repeat",
                                          "delivery-timeout",   "delivery-budget", "timeout",           "max-age",
                                          "save-max-age",       "leak-horizon"};
  for (CLI::Option* o : app.get_options()) {
    if (o->get_type_name() != "TEXT") continue;
    const std::string name = o->get_lnames().empty() ? o->get_name() : o->get_lnames().front();
    if (o->get_lnames().empty()) {  // a positional: its name says it (JOB, NODE, REASON, command)
      o->type_name("");
      continue;
    }
    for (const auto& [option, kind] : kinds)
      if (name == option) o->type_name(kind);
    for (const char* option : durations)
      if (name == option) o->type_name("DURATION");
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) name_values(*sub);
}

// Where a verb's parser describes itself instead of parsing (set by the completion
// verb while it asks each verb); null otherwise.
inline completion_node* g_describe = nullptr;

inline std::string first_sentence(const std::string& text) {
  std::size_t end = text.size();
  for (const char* stop : {"; ", ". ", " (", "\n"}) end = std::min(end, text.find(stop, 1));
  std::string s = text.substr(0, end);
  if (s.size() > 80) s = s.substr(0, s.rfind(' ', 77)) + "...";
  return s;
}

// `app` (whose value names name_values() has set) as a completion_node.
inline completion_node describe_app(const CLI::App& app, const std::string& name) {
  completion_node n;
  n.name = name;
  n.help = first_sentence(app.get_description());
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_group().empty()) continue;  // hidden (helpers for the verbs' own use)
    if (o->get_lnames().empty() && o->get_snames().empty()) {
      n.positionals.push_back(o->get_name());  // JOB, NODE, SHELL, command: the name says the kind
      continue;
    }
    completion_option c;
    for (const auto& l : o->get_lnames()) c.names.push_back("--" + l);
    for (const auto& s : o->get_snames()) c.names.push_back("-" + s);
    c.takes_value = o->get_expected_max() > 0 && o->get_type_size_max() > 0;
    if (c.takes_value) c.kind = o->get_type_name();
    c.help = first_sentence(o->get_description());
    n.options.push_back(c);
  }
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    n.subs.push_back(describe_app(*sub, sub->get_name()));
  return n;
}

}  // namespace trainctl
