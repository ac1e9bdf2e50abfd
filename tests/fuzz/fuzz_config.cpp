// Configuration values as they come from the environment or Python keyword
// arguments: the first byte picks the key. Only parse_error/invalid_argument escape.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "config_impl.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const char* keys[] = {"kill_switch", "save_switch",      "exit_switches", "save_switches",
                               "deadline",    "memory_threshold", "gpu_min_free",  "poll_interval",
                               "signals",     "check_every",      "state_path",    "rank"};
  if (size == 0) return 0;
  const char* key = keys[data[0] % (sizeof keys / sizeof keys[0])];
  const std::string value(reinterpret_cast<const char*>(data) + 1, size - 1);
  trainctl::config::impl cfg;
  try {
    cfg.set(key, value);
    cfg.get(key);
  } catch (const trainctl::parse_error&) {
  } catch (const std::invalid_argument&) {
  }
  return 0;
}
