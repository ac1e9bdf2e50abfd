// What the supervisor reads from outside: scontrol's job line (times, limits) and
// /proc (stat, environ, cmdline). Only parse_error may escape.
#include <cstddef>
#include <cstdint>
#include <string>

#include "parse.hpp"
#include "ranks.hpp"
#include "slurm_job.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    switch (data[0] % 6) {
      case 0:
        trainctl::parse_scontrol_job(text);
        break;
      case 1:
        trainctl::parse_slurm_duration(text);
        break;
      case 2:
        trainctl::parse_slurm_timestamp(text);
        break;
      case 3:
        trainctl::parse_stat_ppid(text);
        break;
      case 4:
        trainctl::environ_has_rank(text);
        break;
      case 5:
        trainctl::cmdline_names_launcher(text, {"torchrun", "deepspeed"});
        break;
    }
  } catch (const trainctl::parse_error&) {
  }
  return 0;
}
