// The SPANK plugin's inputs: plugstack.conf arguments and option values as srun,
// sbatch and salloc pass them. Only parse_error may escape.
#include <cstddef>
#include <cstdint>
#include <string>

#include "parse.hpp"
#include "spank_args.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  trainctl::site_settings s;
  try {
    switch (data[0] % 4) {
      case 0:
        trainctl::apply_site_argument(s, text);
        break;
      case 1:
        trainctl::check_graceful_exit(text);
        break;
      case 2:
        trainctl::check_graceful_signal(text, s);
        break;
      case 3:
        trainctl::check_switch_path("kill-switch", text);
        break;
    }
  } catch (const trainctl::parse_error&) {
  }
  return 0;
}
