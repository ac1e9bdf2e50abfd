// Parsers for values that come from outside: environment variables, command-line
// options, plugstack.conf arguments. Each throws parse_error whose text names what was
// wrong and what is accepted; callers prefix it with the variable or option name.
#pragma once

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace trainctl {

struct parse_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Whether `s` is 1 to `max_len` ASCII digits: a job id, a key that names a file.
bool all_digits(std::string_view s, std::size_t max_len);

// "90s", "10m", "1h", "1.5h", "500ms", "2d"; a bare number takes `bare_unit`
// ('s' or 'm'). Must be > 0 unless allow_zero, and at most `max`.
std::chrono::milliseconds parse_duration(std::string_view text, char bare_unit = 's', bool allow_zero = false,
                                         std::chrono::milliseconds max = std::chrono::hours(24 * 366));

// "512", "4K", "2G", "1.5T", "10GiB", "3PB": binary multiples of bytes.
std::uint64_t parse_size(std::string_view text);

// A threshold either as a share ("10%", 0 < p <= 100) or as a size ("2G").
struct threshold {
  enum class kind { none, percent, bytes };
  kind type = kind::none;
  double percent = 0;
  std::uint64_t bytes = 0;
  bool enabled() const { return type != kind::none; }
  std::string str() const;
};
threshold parse_threshold(std::string_view text);

// Unix time in seconds, "1767225600" or "1767225600.25"; must lie after 2001.
double parse_unix_time(std::string_view text);

// "USR1", "SIGUSR1", "usr1" or a number 1..64.
int parse_signal(std::string_view text);
// "USR1,TERM"; "none" or "" gives an empty list.
std::vector<int> parse_signal_list(std::string_view text);
std::string signal_name(int sig);

// Every piece of `text` between `sep`s, empty ones included ("a,,b" gives a, "", b;
// "" gives one empty piece): each caller states its own rule for empty pieces.
std::vector<std::string_view> split(std::string_view text, char sep);

// A whole number in [lo, hi].
long long parse_int(std::string_view text, long long lo, long long hi);

// "name=path[,name=path]..." for user-defined switches.
struct named_path {
  std::string name;
  std::string path;
};
std::vector<named_path> parse_named_paths(std::string_view text);

std::string format_duration(std::chrono::milliseconds d);
std::string format_size(std::uint64_t bytes);

}  // namespace trainctl
