#include "parse.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace trainctl {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 64)) out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  if (s.size() > 64) out += "...";
  return out + "'";
}

// Splits "12.5GiB" into 12.5 and "GiB". The number is unsigned decimal: no sign,
// exponent, hex, inf or nan, which strtod would otherwise accept.
bool split_number(std::string_view s, double& value, std::string_view& unit) {
  size_t i = 0, digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++digits;
  }
  if (digits == 0 || i > 40) return false;
  value = std::strtod(std::string(s.substr(0, i)).c_str(), nullptr);
  unit = trim(s.substr(i));
  return std::isfinite(value);
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

struct signal_entry {
  const char* name;
  int number;
};
constexpr signal_entry kSignals[] = {
    {"HUP", SIGHUP},   {"INT", SIGINT},       {"QUIT", SIGQUIT}, {"ABRT", SIGABRT},   {"KILL", SIGKILL},
    {"USR1", SIGUSR1}, {"USR2", SIGUSR2},     {"PIPE", SIGPIPE}, {"ALRM", SIGALRM},   {"TERM", SIGTERM},
    {"CONT", SIGCONT}, {"STOP", SIGSTOP},     {"TSTP", SIGTSTP}, {"URG", SIGURG},     {"XCPU", SIGXCPU},
    {"XFSZ", SIGXFSZ}, {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF}, {"WINCH", SIGWINCH}, {"IO", SIGIO},
    {"PWR", SIGPWR},   {"SYS", SIGSYS},       {"SEGV", SIGSEGV}, {"BUS", SIGBUS},     {"ILL", SIGILL},
    {"FPE", SIGFPE},   {"TRAP", SIGTRAP},     {"CHLD", SIGCHLD}, {"TTIN", SIGTTIN},   {"TTOU", SIGTTOU}};

}  // namespace

std::chrono::milliseconds parse_duration(std::string_view text, char bare_unit, bool allow_zero,
                                         std::chrono::milliseconds max) {
  const std::string accepted = std::string("accepted: a positive number with a unit, e.g. 90s, 10m, 1h, 1.5h, 2d") +
                               (bare_unit == 'm' ? " (a bare number is minutes)" : " (a bare number is seconds)");
  std::string_view s = trim(text);
  double value = 0;
  std::string_view unit;
  if (s.empty()) throw parse_error("empty value; " + accepted);
  if (s.front() == '-') throw parse_error(quoted(s) + " is negative; " + accepted);
  if (!split_number(s, value, unit)) throw parse_error(quoted(s) + " is not a duration; " + accepted);
  double ms_per_unit;
  if (unit.empty()) unit = std::string_view(bare_unit == 'm' ? "m" : "s");
  if (iequals(unit, "ms"))
    ms_per_unit = 1;
  else if (iequals(unit, "s") || iequals(unit, "sec") || iequals(unit, "secs"))
    ms_per_unit = 1e3;
  else if (iequals(unit, "m") || iequals(unit, "min") || iequals(unit, "mins"))
    ms_per_unit = 60e3;
  else if (iequals(unit, "h") || iequals(unit, "hour") || iequals(unit, "hours"))
    ms_per_unit = 3600e3;
  else if (iequals(unit, "d") || iequals(unit, "day") || iequals(unit, "days"))
    ms_per_unit = 86400e3;
  else
    throw parse_error(quoted(s) + " has an unknown unit " + quoted(unit) + "; " + accepted);
  const double ms = value * ms_per_unit;
  if (ms > static_cast<double>(max.count()))
    throw parse_error(quoted(s) + " is too long; the most accepted is " + format_duration(max));
  const auto result = std::chrono::milliseconds(static_cast<long long>(std::llround(ms)));
  if (result.count() == 0 && !allow_zero) throw parse_error(quoted(s) + " is zero; " + accepted);
  return result;
}

std::uint64_t parse_size(std::string_view text) {
  static const std::string accepted =
      "accepted: a number with an optional unit B, K, M, G, T or P (binary multiples), e.g. 512M, 2G, 1.5T";
  std::string_view s = trim(text);
  double value = 0;
  std::string_view unit;
  if (s.empty()) throw parse_error("empty value; " + accepted);
  if (s.front() == '-') throw parse_error(quoted(s) + " is negative; " + accepted);
  if (!split_number(s, value, unit)) throw parse_error(quoted(s) + " is not a size; " + accepted);
  int shift = 0;
  if (!unit.empty()) {
    const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(unit[0])));
    const char* units = "BKMGTP";
    const char* at = std::strchr(units, u);
    if (at == nullptr || u == '\0') throw parse_error(quoted(s) + " has an unknown unit; " + accepted);
    shift = static_cast<int>(at - units) * 10;
    std::string_view rest = unit.substr(1);
    if (u == 'B' ? !rest.empty() : !(rest.empty() || iequals(rest, "B") || iequals(rest, "iB")))
      throw parse_error(quoted(s) + " has an unknown unit; " + accepted);
  }
  const double bytes = std::ldexp(value, shift);
  if (bytes >= 18e18) throw parse_error(quoted(s) + " is too large; " + accepted);
  return static_cast<std::uint64_t>(std::llround(bytes));
}

std::string threshold::str() const {
  switch (type) {
    case kind::percent: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%g%%", percent);
      return buf;
    }
    case kind::bytes:
      return format_size(bytes);
    case kind::none:
      break;
  }
  return "none";
}

threshold parse_threshold(std::string_view text) {
  std::string_view s = trim(text);
  threshold t;
  if (!s.empty() && s.back() == '%') {
    double value = 0;
    std::string_view unit;
    if (s.front() == '-' || !split_number(s.substr(0, s.size() - 1), value, unit) || !unit.empty() || value <= 0 ||
        value > 100)
      throw parse_error(quoted(s) +
                        " is not a percentage; accepted: more than 0% and at most 100%, e.g. 5%, or a size such as 2G");
    t.type = threshold::kind::percent;
    t.percent = value;
    return t;
  }
  try {
    t.bytes = parse_size(s);
  } catch (const parse_error& e) {
    throw parse_error(std::string(e.what()) + "; or a percentage such as 5%");
  }
  if (t.bytes == 0)
    throw parse_error(quoted(s) + " is zero; accepted: a size above zero such as 2G, or a percentage such as 5%");
  t.type = threshold::kind::bytes;
  return t;
}

double parse_unix_time(std::string_view text) {
  static const std::string accepted = "accepted: seconds since 1970 as a number, e.g. 1767225600 (date +%s)";
  std::string_view s = trim(text);
  double value = 0;
  std::string_view unit;
  if (s.empty()) throw parse_error("empty value; " + accepted);
  if (!split_number(s, value, unit) || !unit.empty()) throw parse_error(quoted(s) + " is not a unix time; " + accepted);
  if (value < 1e9 || value > 1e11) throw parse_error(quoted(s) + " is out of range; " + accepted);
  return value;
}

int parse_signal(std::string_view text) {
  static const std::string accepted = "accepted: a signal name such as USR1, SIGUSR2, TERM, or a number 1-64";
  std::string_view s = trim(text);
  if (s.empty()) throw parse_error("empty signal; " + accepted);
  if (std::isdigit(static_cast<unsigned char>(s.front()))) {
    try {
      return static_cast<int>(parse_int(s, 1, 64));
    } catch (const parse_error&) {
      throw parse_error(quoted(s) + " is not a signal; " + accepted);
    }
  }
  std::string_view name = s;
  if (name.size() > 3 && iequals(name.substr(0, 3), "SIG")) name.remove_prefix(3);
  for (const auto& e : kSignals)
    if (iequals(name, e.name)) return e.number;
  throw parse_error(quoted(s) + " is not a signal; " + accepted);
}

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    const size_t at = text.find(sep);
    out.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return out;
    text.remove_prefix(at + 1);
  }
}

std::vector<int> parse_signal_list(std::string_view text) {
  std::vector<int> out;
  std::string_view s = trim(text);
  if (s.empty() || iequals(s, "none")) return out;
  for (std::string_view piece : split(s, ',')) {  // an empty piece is an "empty signal"
    const int sig = parse_signal(piece);
    if (std::find(out.begin(), out.end(), sig) == out.end()) out.push_back(sig);
  }
  return out;
}

std::string signal_name(int sig) {
  for (const auto& e : kSignals)
    if (e.number == sig) return e.name;
  return std::to_string(sig);
}

long long parse_int(std::string_view text, long long lo, long long hi) {
  std::string_view s = trim(text);
  const std::string range = "accepted: a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
  bool neg = !s.empty() && s.front() == '-';
  std::string_view digits = neg ? s.substr(1) : s;
  if (digits.empty() || digits.size() > 18) throw parse_error(quoted(s) + " is not a whole number in range; " + range);
  long long v = 0;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) throw parse_error(quoted(s) + " is not a whole number; " + range);
    v = v * 10 + (c - '0');
  }
  if (neg) v = -v;
  if (v < lo || v > hi) throw parse_error(quoted(s) + " is out of range; " + range);
  return v;
}

std::vector<named_path> parse_named_paths(std::string_view text) {
  static const std::string accepted = "accepted: name=/path[,name=/path]..., names of letters, digits, '-' and '_'";
  std::vector<named_path> out;
  std::string_view s = trim(text);
  if (s.empty()) return out;
  const auto pieces = split(s, ',');
  for (size_t i = 0; i < pieces.size(); ++i) {
    std::string_view item = trim(pieces[i]);
    if (item.empty() && i + 1 == pieces.size()) break;  // a trailing comma
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == item.size())
      throw parse_error(quoted(item) + " is not name=path; " + accepted);
    named_path np{std::string(trim(item.substr(0, eq))), std::string(trim(item.substr(eq + 1)))};
    if (np.name.size() > 31) throw parse_error(quoted(np.name) + " is longer than 31 characters; " + accepted);
    for (char c : np.name)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_')
        throw parse_error(quoted(np.name) + " is not a valid name; " + accepted);
    out.push_back(std::move(np));
  }
  return out;
}

std::string format_duration(std::chrono::milliseconds d) {
  const long long ms = d.count();
  char buf[48];
  if (ms % 86400000 == 0 && ms > 0)
    std::snprintf(buf, sizeof buf, "%lldd", ms / 86400000);
  else if (ms % 3600000 == 0 && ms > 0)
    std::snprintf(buf, sizeof buf, "%lldh", ms / 3600000);
  else if (ms % 60000 == 0 && ms > 0)
    std::snprintf(buf, sizeof buf, "%lldm", ms / 60000);
  else if (ms % 1000 == 0)
    std::snprintf(buf, sizeof buf, "%llds", ms / 1000);
  else
    std::snprintf(buf, sizeof buf, "%lldms", ms);
  return buf;
}

std::string format_size(std::uint64_t bytes) {
  static const char* units[] = {"B", "K", "M", "G", "T", "P"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%lluB", static_cast<unsigned long long>(bytes));
  else
    std::snprintf(buf, sizeof buf, v < 10 ? "%.1f%s" : "%.0f%s", v, units[u]);
  return buf;
}

bool all_digits(std::string_view s, std::size_t max_len) {
  return !s.empty() && s.size() <= max_len &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace trainctl
