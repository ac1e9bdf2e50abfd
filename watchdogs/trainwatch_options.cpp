#include "trainwatch_options.hpp"
#include "env.hpp"
#include "env_names.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace trainctl {
namespace {

// A file that holds secrets: readable by this user alone, or refused.
void check_secret_file(const std::string& option, const std::string& path, std::ifstream& in) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0 || !in)
    usage_error(option + " " + path + ": cannot read it (" + std::strerror(errno) + ")");
  if (st.st_mode & 077)
    usage_error(option + " " + path + " can be read by group or others and holds secrets; chmod 600 it");
}

}  // namespace

void usage_error(const std::string& line) {
  std::fprintf(stderr, "trainwatch: %s (see trainwatch --help)\n", line.c_str());
  std::exit(kUnknown);
}

std::string default_state_dir() {
  if (std::string s = env_text(env_var::kTrainwatchStateDir); !s.empty()) return s;
  if (const std::string x = env_text(env_var::kXdgStateHome); !x.empty() && x[0] == '/') return x + "/trainwatch";
  const std::string home = env_text(env_var::kHome);
  return !home.empty() && home[0] == '/' ? home + "/.local/state/trainwatch" : "";
}

alert_setup common_options::setup() const {
  alert_setup s;
  s.state_dir = state_dir;
  s.textfile = textfile;
  s.policy.flap_guard = flap_guard;
  s.policy.repeat = std::chrono::duration_cast<std::chrono::seconds>(
      parsed("--repeat", repeat, [](const std::string& v) { return parse_duration(v, 's'); }));
  s.delivery.tries = tries;
  s.delivery.timeout =
      parsed("--delivery-timeout", delivery_timeout, [](const std::string& v) { return parse_duration(v, 's'); });
  s.delivery.budget = std::chrono::duration_cast<std::chrono::seconds>(
      parsed("--delivery-budget", delivery_budget, [](const std::string& v) { return parse_duration(v, 's'); }));
  if (state_dir.empty())
    usage_error("no state directory: HOME is not set; give --state-dir or set TRAINWATCH_STATE_DIR");
  std::vector<std::string> specs = notify;
  for (const auto& spec : specs) {
    sink k;
    try {
      k = parse_sink(spec);
    } catch (const parse_error& e) {
      usage_error(std::string("--notify: ") + e.what());  // the text never repeats the spec (secrets)
    }
    if (!k.secret_in_spec) continue;
    if (std::find(notify_on_argv.begin(), notify_on_argv.end(), spec) != notify_on_argv.end())
      usage_error("--notify " + k.redacted() +
                  ": the spec holds a secret (a password, a Slack or webhook URL, credentials in a URL) and the "
                  "command line is visible to every user (ps); put it in --notify-file (mode 600), or use "
                  "slack:env:VAR, webhook:env:VAR, alertmanager:env:VAR or TRAINWATCH_SMTP_PASSWORD");
    if (config_file.empty()) continue;
    std::ifstream config(config_file);
    check_secret_file("--config", config_file, config);
  }
  if (!notify_file.empty()) {
    std::ifstream in(notify_file);
    check_secret_file("--notify-file", notify_file, in);
    std::string line;
    while (std::getline(in, line)) {
      const size_t a = line.find_first_not_of(" \t\r");
      if (a == std::string::npos || line[a] == '#') continue;
      const size_t b = line.find_last_not_of(" \t\r");
      specs.push_back(line.substr(a, b - a + 1));
    }
  }
  for (const auto& spec : specs) {
    try {
      s.sinks.push_back(parse_sink(spec));
    } catch (const parse_error& e) {
      usage_error(std::string("--notify: ") + e.what());  // the text never repeats the spec (secrets)
    }
  }
  s.state_dir = state_dir;
  try {
    check_state_dirs(s);  // before any check runs: a refused directory sends nothing
  } catch (const std::exception& e) {
    usage_error(e.what());
  }
  return s;
}

}  // namespace trainctl
