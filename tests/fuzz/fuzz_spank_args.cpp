// The SPANK plugin's inputs: plugstack.conf arguments and option values as srun,
// sbatch and salloc (and trainctl-run's command line) pass them, every row of the
// option table. Only parse_error may escape.
#include <cstddef>
#include <cstdint>
#include <string>

#include "parse.hpp"
#include "run_option_table.hpp"
#include "spank_args.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  trainctl::site_settings s;
  try {
    const auto& table = trainctl::run_option_table();
    const std::size_t pick = data[0] % (table.size() + 2);
    if (pick == 0) {
      trainctl::apply_site_argument(s, text);
    } else if (pick == 1) {
      trainctl::check_graceful_signal(text, s);
    } else {
      trainctl::supervisor_options o;  // an option's value, as the plugin or trainctl-run gets it
      trainctl::apply_run_option(table[pick - 2], o, text);
    }
  } catch (const trainctl::parse_error&) {
  }
  return 0;
}
