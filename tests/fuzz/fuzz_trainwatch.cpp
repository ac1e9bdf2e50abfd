// trainwatch's parsers of outside input: sink URLs, quota command output, squeue
// lines, spooled alerts. Only parse_error / json exceptions may escape.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "checks.hpp"
#include "parse.hpp"
#include "sinks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 4) {
      case 0: {
        auto s = trainctl::parse_sink(text);
        (void)s.redacted();
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
