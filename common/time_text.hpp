// A moment as text, the one place trainctl turns a Unix time into a date: local time for
// what a person on that node reads (its logs, SLURM's own format), UTC where nodes in
// other time zones must agree (a run id) or a protocol says so (mail, Alertmanager).
#pragma once

#include <cstdint>
#include <string>

namespace trainctl {

enum class time_zone { local, utc };

// strftime's `format` for `unix_s` seconds; "?" when the time cannot be broken down.
std::string time_text(std::int64_t unix_s, const char* format, time_zone zone);

// "2026-12-02T19:52:07" in local time: SLURM's own timestamps (scontrol, logs).
inline std::string local_timestamp(std::int64_t unix_s) {
  return time_text(unix_s, "%Y-%m-%dT%H:%M:%S", time_zone::local);
}

}  // namespace trainctl
