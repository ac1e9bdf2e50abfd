// Every parser in common/parse.hpp on arbitrary text: durations, sizes, thresholds,
// unix times, signals, whole numbers, name=path lists. Only parse_error may escape.
#include <cstddef>
#include <cstdint>
#include <string>

#include "parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 8) {
      case 0:
        trainctl::format_duration(trainctl::parse_duration(text, 'm'));
        break;
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
      case 5:
        trainctl::parse_signal_list(text);
        break;
      case 6:
        trainctl::parse_int(text, -1000, 1000);
        break;
      case 7:
        trainctl::parse_named_paths(text);
        break;
    }
  } catch (const trainctl::parse_error&) {
  }
  return 0;
}
