// How long this user's saves took, per job array, so that --graceful-exit=auto can leave
// the save the time it needs and no more. One small file per array (or job) in the
// per-user state directory on the shared home, one line per longer save seen:
//   <unix seconds> job=<id> node=<name> save_ms=<n>
// Written by the supervisors (the publisher of each node), read when a task starts.
// Kept small: past 64 KiB, the next record compacts the file to each kind's longest
// line (all that is read from it).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace trainctl {

// TRAINCTL_SAVE_TIMES_DIR, else $XDG_STATE_HOME/trainctl/save_times, else
// $HOME/.local/state/trainctl/save_times; "" when none can be named.
std::string save_times_dir();

// The file for the job array `key` (SLURM_ARRAY_JOB_ID, else SLURM_JOB_ID): digits
// only, else "".
std::string save_times_path(const std::string& key);

// The file of every job named `job_name` (SLURM_JOB_NAME), which `trainctl drill` fills
// so that the first task of a new array starts informed: name.<job name> when the name
// is 1 to 100 of [A-Za-z0-9._-] (else ""). Read beside the array's own file: the longest
// of each kind in either counts.
std::string save_times_path_for_name(const std::string& job_name);

// The longest save recorded in `path` (ms), 0 when none or no such file. A file that is
// not this user's regular file is refused: *why says so in one line.
std::int64_t longest_recorded_save_ms(const std::string& path, std::string* why);

// Appends one line (creating the directory, 0700). "" or why it could not.
std::string record_save_time(const std::string& path, const std::string& job, const std::string& node,
                             std::int64_t save_ms);

// The hang budgets learn from the same file, one line per longer duration seen:
//   <unix seconds> job=<id> node=<name> phase=<name> ms=<n>
// where <name> is a phase the loop marked, or kQuietPhase for the longest time a
// training rank went between agreements (--hang-timeout=auto).
inline constexpr const char* kQuietPhase = ":training";
// The longest of each phase recorded in `path` (ms), with "save" from the save lines.
// Empty when none or no such file; refused like longest_recorded_save_ms.
std::map<std::string, std::int64_t> longest_recorded_phases(const std::string& path, std::string* why);
std::string record_phase_time(const std::string& path, const std::string& job, const std::string& node,
                              const std::string& phase, std::int64_t ms);

// --graceful-exit=auto: the graceful exit for a longest save of `longest_ms` (0: none
// seen yet) and a time limit of `limit_s` (0: unknown), and one line saying why.
struct auto_graceful {
  std::chrono::milliseconds graceful{0};
  std::string why;
};
inline constexpr double kAutoSaveFactor = 1.5;                      // the longest save, times this,
inline constexpr std::chrono::milliseconds kAutoMargin{30000};      // plus this
inline constexpr std::chrono::milliseconds kAutoFloor{60000};       // never under this
inline constexpr std::chrono::milliseconds kAutoFirstTask{600000};  // no save seen yet
auto_graceful auto_graceful_exit(std::int64_t longest_ms, std::int64_t limit_s);

// The least lead an explicit --graceful-exit=DURATION needs for a deadline save, from
// what was measured: the longest save x kAutoSaveFactor (a slower disk, a larger
// state), the longest time a training rank went between agreements (the notice is
// agreed at the next one), and kLeadMargin for the notice to reach the ranks and for
// them to exit. auto leaves more (kAutoMargin, kAutoFloor): it also has to hold what
// was never measured. `trainctl lint` and `trainctl drill` judge a lead by this.
inline constexpr std::chrono::milliseconds kLeadMargin{10000};
std::int64_t lead_needed_ms(std::int64_t longest_save_ms, std::int64_t longest_quiet_ms);

}  // namespace trainctl
