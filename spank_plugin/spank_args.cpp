#include "spank_args.hpp"

#include <sys/stat.h>
#include <algorithm>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "options.hpp"
#include "parse.hpp"
#include "run_option_table.hpp"

namespace trainctl {
namespace {

bool parse_bool(const std::string& key, const std::string& v) {
  if (v == "yes" || v == "true" || v == "1") return true;
  if (v == "no" || v == "false" || v == "0") return false;
  throw parse_error(key + "=" + v + ": accepted: yes or no");
}

}  // namespace

std::vector<plugin_option_doc> plugin_option_docs(int default_signal) {
  std::vector<plugin_option_doc> docs;
  for (const run_option& r : run_option_table()) {
    if (!r.in_plugin()) continue;
    const std::string name = r.name;
    std::string help = r.help;
    // What the plugin does beyond the supervisor's option, and the site's default.
    if (r.value_optional()) help += std::string("; exported as ") + r.bare_var;
    if (name == "--on-notice") help += " (time limit " + format_duration(option::kOnNoticeTimeoutDefault) + ")";
    const std::string shown = name == "--graceful-signal" ? signal_name(default_signal) : r.shown_default();
    if (!shown.empty()) help += " (default " + shown + ")";
    docs.push_back({r.bare(), r.metavar != nullptr ? r.metavar : "", r.value_optional(), help});
  }
  return docs;
}

void apply_site_argument(site_settings& s, const std::string& arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0)
    throw parse_error(
        "'" + arg +
        "' is not key=value; accepted keys: default_graceful_exit, default_hang_timeout, metrics_dir, signals, "
        "default_signal, launchers, poll_interval, endtime_poll, shield, always, supervisor");
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
  else if (key == "default_hang_timeout")
    wrap([&] {
      supervisor_options scratch;  // checked as the option is; passed on to each job that gives none
      apply_run_option(run_option_named("--hang-timeout"), scratch, value);
      s.default_hang_timeout = value;
    });
  else if (key == "metrics_dir")
    wrap([&] { s.metrics_dir = option::check_metrics_dir(value); });
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
                      "'; accepted keys: default_graceful_exit, default_hang_timeout, metrics_dir, signals, "
                      "default_signal, launchers, poll_interval, endtime_poll, shield, always, supervisor");
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

std::string untrusted_supervisor(const std::string& path) {
  if (path.empty() || path.front() != '/') return "is not an absolute path";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return std::string("cannot be found: ") + std::strerror(errno);
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  auto loose = [](const struct stat& s, bool dir) {
    if (s.st_uid != 0) return std::string("belongs to uid ") + std::to_string(s.st_uid) + ", not root";
    if ((s.st_mode & (S_IWGRP | S_IWOTH)) != 0 && !(dir && (s.st_mode & S_ISVTX) != 0)) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(s.st_mode & 07777));
      return std::string("is writable by group or others (mode ") + mode + ")";
    }
    return std::string();
  };
  std::string why = loose(st, false);
  if (!why.empty()) return why;
  for (std::string dir = path.substr(0, path.rfind('/')); !dir.empty(); dir = dir.substr(0, dir.rfind('/'))) {
    if (stat(dir.c_str(), &st) != 0) return "has an unreadable directory " + dir;
    why = loose(st, true);
    if (!why.empty()) return "is in " + dir + ", which " + why;
  }
  if (stat("/", &st) == 0 && !(why = loose(st, true)).empty()) return "is under /, which " + why;
  return "";
}

std::vector<std::string> supervisor_argv(const site_settings& site, const supervisor_options& opts,
                                         const std::vector<given_option>& given, bool batch, const std::string& state) {
  const auto flag = [](const char* name) -> const run_option& { return run_option_named(name); };
  auto ms = [](std::chrono::milliseconds d) { return std::to_string(d.count()) + "ms"; };
  std::vector<std::string> args{site.supervisor};
  // What the site sets, or the plugin resolves, the options given can change.
  if (batch) args.emplace_back(flag("--batch").name);
  if (opts.graceful_exit == option::kGracefulExitAuto)
    args.push_back(flag("--graceful-exit").with("auto"));
  else if (opts.graceful_exit.count() > 0)
    args.push_back(flag("--graceful-exit").with(ms(opts.graceful_exit)));
  if (!opts.kill_switch.empty()) args.push_back(flag("--kill-switch").with(opts.kill_switch));
  if (!opts.save_switch.empty()) args.push_back(flag("--save-switch").with(opts.save_switch));
  args.push_back(flag("--graceful-signal").with(signal_name(opts.graceful_signal)));
  args.push_back(flag("--poll-interval").with(ms(site.poll_interval)));
  args.push_back(flag("--endtime-poll").with(ms(site.endtime_poll)));
  if (!site.launchers.empty()) args.push_back(flag("--launchers").with(site.launchers));
  if (!site.shield) args.emplace_back(flag("--no-shield").name);
  if (!site.default_hang_timeout.empty() && !is_given(given, "--hang-timeout"))
    args.push_back(flag("--hang-timeout").with(site.default_hang_timeout));
  if (!site.metrics_dir.empty() && !is_given(given, "--metrics-dir"))
    args.push_back(flag("--metrics-dir").with(site.metrics_dir));
  // Every other option passes on as given: the supervisor parses it with the same row.
  for (const auto& o : given) {
    const std::string name = o.row->name;
    if (name == "--graceful-exit" || name == "--kill-switch" || name == "--save-switch" || name == "--graceful-signal")
      continue;
    if (name == "--hang-phase-timeout" && opts.hang.timeout.count() == 0) continue;  // no hang is looked for
    const bool bare = o.row->metavar == nullptr || (o.row->value_optional() && o.value.empty());
    args.push_back(bare ? name : o.row->with(o.value));
  }
  if (!state.empty()) args.push_back("--state=" + state);
  return args;
}

}  // namespace trainctl
