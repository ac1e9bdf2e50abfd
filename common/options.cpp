#include "options.hpp"

#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <iterator>

namespace trainctl {
namespace option {

static_assert(SIGUSR1 == kGracefulSignalDefault, "the default graceful signal is SIGUSR1");

namespace {

milliseconds bounded(std::string_view text, char bare_unit, milliseconds lo, milliseconds hi) {
  const milliseconds d = parse_duration(text, bare_unit, false, hi);
  if (d < lo)
    throw parse_error("'" + std::string(text) + "' is too short; accepted: " + format_duration(lo) + " to " +
                      format_duration(hi));
  return d;
}

std::string notice_signals_accepted() {
  return "accepted: HUP, INT, USR1, USR2, ALRM, TERM, URG, XCPU, VTALRM, PROF, WINCH, PWR, or a real-time signal " +
         std::to_string(SIGRTMIN) + "-" + std::to_string(SIGRTMAX);
}

}  // namespace

milliseconds parse_poll_interval(std::string_view text) {
  return bounded(text, 's', kPollIntervalMin, kPollIntervalMax);
}

milliseconds parse_endtime_poll(std::string_view text) { return bounded(text, 's', kEndtimePollMin, kEndtimePollMax); }

milliseconds parse_graceful_exit(std::string_view text) {
  if (text == "auto") return kGracefulExitAuto;
  try {
    return parse_duration(text, 'm', false, kGracefulExitMax);
  } catch (const parse_error& e) {
    throw parse_error(std::string(e.what()) + ", or auto");
  }
}

milliseconds parse_metrics_interval(std::string_view text) {
  try {
    return bounded(text, 's', milliseconds(1000), milliseconds(3600 * 1000));
  } catch (const parse_error& e) {
    throw parse_error(std::string("--metrics-interval") + ": " + e.what());
  }
}

std::string check_metrics_dir(std::string_view text) {
  if (text.empty() || text[0] != '/' || text.size() > 1024 || text.find('\n') != std::string_view::npos)
    throw parse_error("--metrics-dir: '" + std::string(text.substr(0, 80)) +
                      "' is not an absolute path; accepted: node_exporter's textfile directory, e.g. "
                      "/var/lib/prometheus/node-exporter");
  return std::string(text);
}

milliseconds parse_on_notice_timeout(std::string_view text) {
  try {
    return bounded(text, 's', milliseconds(1000), kOnNoticeTimeoutMax);
  } catch (const parse_error& e) {
    throw parse_error(std::string("--on-notice-timeout") + ": " + e.what());
  }
}

milliseconds parse_hang_timeout(std::string_view text) {
  if (text == "off" || text == "0") return milliseconds(0);
  if (text == "auto") return kHangTimeoutAuto;
  try {
    return bounded(text, 'm', milliseconds(1000), milliseconds(7LL * 24 * 3600 * 1000));
  } catch (const parse_error& e) {
    throw parse_error(std::string("--hang-timeout") + ": " + e.what() + " (or auto, or off)");
  }
}

std::vector<std::pair<std::string, milliseconds>> parse_hang_phase_timeout(std::string_view text) {
  const std::string name = "--hang-phase-timeout";
  std::vector<std::pair<std::string, milliseconds>> out;
  if (text.empty())
    throw parse_error(name + ": empty; accepted: NAME=DURATION[,NAME=DURATION...], e.g. save=20m,eval=1h");
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t end = text.find(',', at);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view item = text.substr(at, end - at);
    at = end + 1;
    const std::size_t eq = item.find('=');
    const std::string phase(item.substr(0, eq == std::string_view::npos ? 0 : eq));
    bool ok = !phase.empty() && phase.size() < 32 && phase[0] != '.' && phase[0] != '-';
    for (const char c : phase)
      ok = ok && (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-');
    if (eq == std::string_view::npos || !ok)
      throw parse_error(name + ": '" + std::string(item) +
                        "'; accepted: NAME=DURATION[,...], NAME 1-31 of letters, digits, '_', '.', '-', e.g. eval=30m");
    for (const auto& p : out)
      if (p.first == phase) throw parse_error(name + ": phase '" + phase + "' is given twice");
    try {
      out.emplace_back(phase,
                       bounded(item.substr(eq + 1), 'm', milliseconds(1000), milliseconds(7LL * 24 * 3600 * 1000)));
    } catch (const parse_error& e) {
      throw parse_error(name + ": " + phase + ": " + e.what());
    }
    if (end == text.size()) break;
  }
  return out;
}

int parse_hang_action(std::string_view text) {
  if (text == "alert") return 0;
  if (text == "save-exit") return 1;
  if (text == "end-step") return 2;
  throw parse_error(std::string("--hang-action") + ": '" + std::string(text) +
                    "'; accepted: alert, save-exit, end-step");
}

int parse_no_progress_runs(std::string_view text) {
  const std::string t(text);
  char* end = nullptr;
  errno = 0;
  const long n = t.empty() || !std::isdigit(static_cast<unsigned char>(t[0])) ? -1 : std::strtol(t.c_str(), &end, 10);
  if (n < 0 || n > 1000 || errno != 0 || end == nullptr || *end != '\0')
    throw parse_error(std::string("--no-progress-runs") + ": '" + t +
                      "'; accepted: a count of runs from 0 (off) to 1000");
  return static_cast<int>(n);
}

std::string check_on_notice(std::string_view command) {
  const std::string name = "--on-notice";
  if (command.size() >= 4096) throw parse_error(name + ": the command is longer than 4095 characters");
  if (command.find('\n') != std::string_view::npos)
    throw parse_error(name + ": the command spans lines; accepted: one line of shell (put more in a script)");
  if (!command.empty() && command.find_first_not_of(" \t") == std::string_view::npos)
    throw parse_error(name + ": the command is blank; accepted: one line of shell, e.g. --on-notice='./on_notice.sh'");
  return std::string(command);
}

bool is_notice_signal(int sig) {
  switch (sig) {
    case SIGHUP:
    case SIGINT:
    case SIGUSR1:
    case SIGUSR2:
    case SIGALRM:
    case SIGTERM:
    case SIGURG:
    case SIGXCPU:
    case SIGVTALRM:
    case SIGPROF:
    case SIGWINCH:
    case SIGPWR:
      return true;
    default:
      return sig >= SIGRTMIN && sig <= SIGRTMAX;
  }
}

int parse_notice_signal(std::string_view text) {
  int sig = 0;
  try {
    sig = parse_signal(text);
  } catch (const parse_error& e) {
    throw parse_error(std::string(e.what()).substr(0, std::string(e.what()).find(';')) + "; " +
                      notice_signals_accepted());
  }
  if (!is_notice_signal(sig))
    throw parse_error("'" + std::string(text) + "' (SIG" + signal_name(sig) +
                      ") cannot carry a notice: a fault, job-control, uncatchable or C-library signal; " +
                      notice_signals_accepted());
  return sig;
}

std::vector<int> parse_notice_signal_list(std::string_view text) {
  std::vector<int> out = parse_signal_list(text);
  for (int sig : out)
    if (!is_notice_signal(sig)) parse_notice_signal(std::to_string(sig));  // throws with the reason
  return out;
}

std::vector<int> default_shield() { return {std::begin(kDefaultShield), std::end(kDefaultShield)}; }
std::vector<int> default_notices() { return {SIGTERM, SIGUSR1, SIGUSR2}; }
std::vector<int> default_rank_signals() { return {SIGUSR1, SIGTERM}; }

}  // namespace option
}  // namespace trainctl
