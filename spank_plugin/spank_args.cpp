#include "spank_args.hpp"

#include <algorithm>
#include <csignal>

#include "options.hpp"
#include "parse.hpp"

namespace trainctl {
namespace {

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "yes" || v == "true" || v == "1") return true;
  if (v == "no" || v == "false" || v == "0") return false;
  throw parse_error(key + "=" + v + ": accepted: yes or no");
}

}  // namespace

void apply_site_argument(site_settings& s, const std::string& arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    throw parse_error("'" + arg +
                      "' is not key=value; accepted keys: default_graceful_exit, signals, default_signal, "
                      "launchers, poll_interval, endtime_poll, shield, always, supervisor");
  const std::string key = arg.substr(0, eq), value = arg.substr(eq + 1);
  auto wrap = [&](auto&& f) {
    try {
      f();
    } catch (const parse_error& e) {
      throw parse_error(key + ": " + e.what());
    }
  };
  if (key == "default_graceful_exit")
    wrap([&] { s.default_graceful_exit = parse_duration(value, 'm', true); });
  else if (key == "signals")
    wrap([&] { s.allowed_signals = option::parse_notice_signal_list(value); });
  else if (key == "default_signal")
    wrap([&] { s.default_signal = option::parse_notice_signal(value); });
  else if (key == "launchers")
    s.launchers = value;
  else if (key == "poll_interval")
    wrap([&] { s.poll_interval = option::parse_poll_interval(value); });
  else if (key == "endtime_poll")
    wrap([&] { s.endtime_poll = option::parse_endtime_poll(value); });
  else if (key == "shield")
    s.shield = parse_bool(key, value);
  else if (key == "always")
    s.always = parse_bool(key, value);
  else if (key == "supervisor") {
    if (value.empty() || value.front() != '/')
      throw parse_error("supervisor=" + value + ": accepted: an absolute path");
    s.supervisor = value;
  } else {
    throw parse_error("unknown key '" + key +
                      "'; accepted keys: default_graceful_exit, signals, default_signal, "
                      "launchers, poll_interval, endtime_poll, shield, always, supervisor");
  }
}

std::chrono::milliseconds check_graceful_exit(const std::string& value) {
  try {
    return option::parse_graceful_exit(value);
  } catch (const parse_error& e) {
    throw parse_error("--graceful-exit=" + value + ": " + e.what());
  }
}

int check_graceful_signal(const std::string& value, const site_settings& s) {
  int sig = 0;
  try {
    sig = option::parse_notice_signal(value);
  } catch (const parse_error& e) {
    throw parse_error("--graceful-signal=" + value + ": " + e.what());
  }
  std::vector<int> allowed = s.allowed_signals;
  if (allowed.empty()) allowed = {SIGUSR1, SIGUSR2, SIGTERM, SIGINT, SIGHUP, SIGURG, SIGWINCH};
  if (std::find(allowed.begin(), allowed.end(), sig) == allowed.end()) {
    std::string list;
    for (int a : allowed) list += (list.empty() ? "" : ", ") + signal_name(a);
    throw parse_error("--graceful-signal=" + value + ": not allowed here; accepted: " + list);
  }
  return sig;
}

std::string check_switch_path(const std::string& option, const std::string& value) {
  if (value.empty()) return value;  // the documented default
  if (value.size() >= 1024) throw parse_error("--" + option + ": the path is longer than 1023 characters");
  if (value.find('\n') != std::string::npos) throw parse_error("--" + option + ": the path contains a newline");
  return value;
}

}  // namespace trainctl
