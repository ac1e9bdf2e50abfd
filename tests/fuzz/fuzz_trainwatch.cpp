// trainwatch's parsers of outside input: sink URLs, quota command output, squeue
// lines, spooled alerts, and json_safe over any bytes. Only parse_error / json
// exceptions may escape; json_safe has an oracle: its output is UTF-8 that JSON accepts
// and that json_safe leaves as it is.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "check_result.hpp"
#include "checks.hpp"
#include "parse.hpp"
#include "sinks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 5) {
      case 0: {
        auto s = trainctl::parse_sink(text);
        (void)s.redacted();
        break;
      }
      case 4: {
        const std::string safe = trainctl::json_safe(text);
        if (trainctl::json_safe(safe) != safe) __builtin_trap();
        try {
          (void)nlohmann::json(safe).dump();
        } catch (const nlohmann::json::exception&) {
          __builtin_trap();  // not UTF-8 after all
        }
        break;
      }
      case 1:
        trainctl::parse_quota_output(text);
        break;
      case 2:
        trainctl::parse_squeue(text);
        break;
      case 3:
        trainctl::alert_message::from_json(text);
        break;
    }
  } catch (const trainctl::parse_error&) {
  } catch (const nlohmann::json::exception&) {
  }
  return 0;
}
