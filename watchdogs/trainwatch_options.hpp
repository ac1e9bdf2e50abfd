// What every trainwatch subcommand shares: its usage errors (one line, exit 3), option
// values parsed with the option's name in the error, and the alerting options.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "alerting.hpp"
#include "checks.hpp"
#include "parse.hpp"

namespace trainctl {

// "trainwatch: LINE (see trainwatch --help)" on stderr, exit 3 (UNKNOWN).
[[noreturn]] void usage_error(const std::string& line);

// TRAINWATCH_STATE_DIR, $XDG_STATE_HOME/trainwatch, ~/.local/state/trainwatch; never a
// shared place such as /tmp: with HOME unset there is no default.
std::string default_state_dir();

// f(value), or a usage error naming the option.
template <typename F>
auto parsed(const std::string& option, const std::string& value, F&& f) {
  try {
    return f(value);
  } catch (const parse_error& e) {
    usage_error(option + ": " + e.what());
  }
}

// Options every check shares: where alerts go and how often.
struct common_options {
  std::vector<std::string> notify;
  std::string notify_file, state_dir = default_state_dir(), repeat = "4h", textfile, delivery_timeout = "10s",
                           delivery_budget = "60s";
  std::vector<std::string> notify_on_argv;  // set by run_main: these must hold no secret
  std::string config_file;
  int flap_guard = 1, tries = 3;

  void add_to(CLI::App* app) {
    app->add_option("--notify", notify,
                    "where alerts go (repeatable): smtp://[user@]host[:port]?from=A&to=B[&starttls=required], "
                    "smtps://..., sendmail:ADDRESS, slack:env:VAR, webhook:env:VAR (the URL in the environment "
                    "variable VAR: a URL is a secret, and the command line is visible to every user), "
                    "alertmanager:http(s)://HOST:PORT (Alertmanager's API v2)");
    app->add_option("--notify-file", notify_file,
                    "read sinks from FILE, one per line; the place for slack:URL, webhook:URL and "
                    "smtp://user:password@... (must be mode 600)");
    app->add_option("--state-dir", state_dir,
                    "alert history and spool (default $TRAINWATCH_STATE_DIR, $XDG_STATE_HOME/trainwatch or "
                    "~/.local/state/trainwatch); must be yours and writable by nobody else");
    app->add_option("--repeat", repeat, "repeat a standing alert this often (default 4h)");
    app->add_option("--flap-guard", flap_guard, "consecutive failures before the first alert (default 1)")
        ->check(CLI::Range(1, 1000));
    app->add_option("--tries", tries, "delivery attempts per alert in one run (default 3)")->check(CLI::Range(1, 10));
    app->add_option("--textfile", textfile, "also write a Prometheus node_exporter textfile here");
    app->add_option("--delivery-timeout", delivery_timeout, "give up on one delivery attempt after this (default 10s)");
    app->add_option("--delivery-budget", delivery_budget,
                    "spend at most this on delivery in one run; what is left waits in the spool (default 60s)");
  }

  // The alert layer's setup from these options; a bad value is usage_error.
  alert_setup setup() const;
};

}  // namespace trainctl
