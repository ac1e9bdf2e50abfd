// Every parser in common/parse.hpp on arbitrary text: durations, sizes, thresholds,
// unix times, signals, whole numbers, name=path lists. Only parse_error may escape.
// Oracles, where formatting is exact: a parsed duration formats to text that parses
// back to it; a parsed signal list's names parse back to the same list; a whole
// number is within its bounds. A broken oracle traps.
#include <cstddef>
#include <cstdint>
#include <string>

#include "parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 8) {
      case 0: {
        const auto d = trainctl::parse_duration(text, 'm');
        if (trainctl::parse_duration(trainctl::format_duration(d), 'm') != d) __builtin_trap();
        break;
      }
      case 1:
        trainctl::parse_duration(text, 's', true);
        break;
      case 2:
        trainctl::format_size(trainctl::parse_size(text));
        break;
      case 3:
        trainctl::parse_threshold(text).str();
        break;
      case 4:
        trainctl::parse_unix_time(text);
        break;
      case 5: {
        const auto sigs = trainctl::parse_signal_list(text);
        std::string names;
        for (int sig : sigs) names += (names.empty() ? "" : ",") + trainctl::signal_name(sig);
        if (!sigs.empty() && trainctl::parse_signal_list(names) != sigs) __builtin_trap();
        break;
      }
      case 6: {
        const long long n = trainctl::parse_int(text, -1000, 1000);
        if (n < -1000 || n > 1000) __builtin_trap();
        break;
      }
      case 7:
        trainctl::parse_named_paths(text);
        break;
    }
  } catch (const trainctl::parse_error&) {
  }
  return 0;
}
