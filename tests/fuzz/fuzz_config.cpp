// Configuration values as they come from the environment or Python keyword
// arguments, through the public config API: the first byte picks the key. Only
// invalid_argument escapes. Oracle: what get() says of an accepted value is accepted
// by set() and said again the same way (the text a user sees can be given back).
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "trainctl/controller.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const char* keys[] = {"kill_switch", "save_switch",     "exit_switches", "save_switches",
                               "deadline",    "memory_min_free", "gpu_min_free",  "poll_interval",
                               "signals",     "check_every",     "state_path",    "rank"};
  if (size == 0) return 0;
  const char* key = keys[data[0] % (sizeof keys / sizeof keys[0])];
  const std::string value(reinterpret_cast<const char*>(data) + 1, size - 1);
  trainctl::config cfg;
  try {
    cfg.set(key, value);
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const std::string said = cfg.get(key);
  try {
    cfg.set(key, said);
  } catch (const std::invalid_argument&) {
    __builtin_trap();  // get() said something set() refuses
  }
  if (cfg.get(key) != said) __builtin_trap();
  return 0;
}
