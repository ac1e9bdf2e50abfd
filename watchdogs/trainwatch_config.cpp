#include "trainwatch_config.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "check_result.hpp"

namespace trainctl {
namespace {

std::string unquoted(std::string v) {
  if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front()) v = v.substr(1, v.size() - 2);
  return v;
}

// The line without its comment (a '#' outside quotes, as CLI11 reads it) and without
// the white space around what is left.
std::string config_text(const std::string& line) {
  char quote = 0;
  size_t end = line.size();
  for (size_t i = 0; i < line.size() && end == line.size(); ++i) {
    if (quote != 0 && line[i] == quote)
      quote = 0;
    else if (quote == 0 && (line[i] == '"' || line[i] == '\''))
      quote = line[i];
    else if (quote == 0 && (line[i] == '#' || (line[i] == ';' && i == line.find_first_not_of(" \t"))))
      end = i;
  }
  const size_t a = line.find_first_not_of(" \t\r");
  if (a == std::string::npos || a >= end) return "";
  return line.substr(a, line.find_last_not_of(" \t\r", end - 1) - a + 1);
}

}  // namespace

std::vector<std::string> check_config(const std::string& path, const CLI::App& app) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw config_error("--config " + path + ": cannot read it (" + std::strerror(errno) + ")");
  auto names_of = [](const CLI::App* a) {
    std::vector<std::string> names;
    for (const CLI::Option* o : a->get_options())
      for (const auto& n : o->get_lnames()) names.push_back(n);
    return names;
  };
  const std::vector<std::string> top = names_of(&app);
  auto subcommand = [&](const std::string& name) -> const CLI::App* {
    for (const CLI::App* c : app.get_subcommands([](const CLI::App*) { return true; }))
      if (c->get_name() == name) return c;
    return nullptr;
  };
  std::vector<std::string> fs_words;
  std::string section, line;
  for (int n = 1; std::getline(in, line); ++n) {
    const std::string where = "--config " + path + ":" + std::to_string(n) + ": ";
    if (line.find('\0') != std::string::npos || json_safe(line) != line)
      throw config_error(where + "not text (a NUL or a byte that is not UTF-8)");
    const std::string text = config_text(line);
    if (text.empty()) continue;
    if (text.front() == '[') {
      if (text.back() != ']') throw config_error(where + "'" + text + "' is not a [section]");
      section = text.substr(text.find_first_not_of('['), text.find_last_not_of(']') - text.find_first_not_of('[') + 1);
      if (section != "default" && subcommand(section) == nullptr)
        throw config_error(where + "[" + section +
                           "] is not a subcommand; accepted: job-running, log-stall, slow-nodes, job-on-bad-node, fs, "
                           "memory, notify, flush");
      continue;
    }
    const size_t eq = text.find('=');
    if (eq == std::string::npos) throw config_error(where + "not 'key = value'");
    std::string key = unquoted(config_text(text.substr(0, eq)));
    std::string value = config_text(text.substr(eq + 1));
    if (key.empty() || value.empty()) throw config_error(where + "not 'key = value'");
    std::string sec = section == "default" ? "" : section;
    if (sec.empty() && key.find('.') != std::string::npos) {  // subcommand.key at the top
      sec = key.substr(0, key.find('.'));
      key = key.substr(key.find('.') + 1);
    }
    const CLI::App* sub = sec.empty() ? nullptr : subcommand(sec);
    if (!sec.empty() && sub == nullptr) throw config_error(where + "'" + sec + "' is not a subcommand");
    std::vector<std::string> known = top;
    if (sub != nullptr) {
      const auto more = names_of(sub);
      known.insert(known.end(), more.begin(), more.end());
    }
    if (std::find(known.begin(), known.end(), key) == known.end() || key == "config")
      throw config_error(where + "unknown key '" + key + "'" + (sec.empty() ? "" : " in [" + sec + "]") +
                         "; the keys are the long options of trainwatch --help" +
                         (sec.empty() ? "" : " and of " + sec + " --help"));
    if (value.front() == '[') {  // an array, possibly over several lines
      while (value.back() != ']' && std::getline(in, line)) {
        ++n;
        value += config_text(line);
      }
      if (value.back() != ']') throw config_error(where + "the array of '" + key + "' is not closed with ]");
    } else if ((value.front() == '"' || value.front() == '\'') && (value.size() < 2 || value.back() != value.front())) {
      throw config_error(where + "the string of '" + key + "' is not closed");
    }
    if (sec == "fs") {
      if (value.front() == '[')
        throw config_error(where + "[fs] takes one value per line (each option applies to the path before it)");
      fs_words.push_back("--" + key);
      fs_words.push_back(unquoted(value));
    }
  }
  return fs_words;
}

}  // namespace trainctl
