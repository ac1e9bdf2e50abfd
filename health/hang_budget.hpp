// How long a quiet rank may stay quiet before it is hung: its phase's budget. A rank
// that trains is judged by --hang-timeout; a rank inside a save (one trainctl asked for,
// or the loop's own marked "save") or inside a phase the loop marked (ctl.phase("eval"))
// by that phase's budget: set with --hang-phase-timeout, else learnt as a multiple of the
// longest the phase took in this job array, never under --hang-timeout; a phase never
// seen to finish gets the first-time budget, which no healthy save or evaluation should
// outlast. With --hang-timeout=auto training is learnt too, from the longest time a
// training rank went between agreements.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

namespace trainctl {

inline constexpr double kPhaseFactor = 3.0;                             // a learnt phase: 3 x its longest,
inline constexpr double kQuietFactor = 5.0;                             // auto training: 5 x its longest quiet
inline constexpr std::chrono::milliseconds kAutoHangFloor{60000};       // auto: never under a minute
inline constexpr std::chrono::milliseconds kFirstPhaseBudget{1800000};  // nothing learnt yet: 30 minutes

struct hang_budget {
  std::chrono::milliseconds budget{0};
  std::string why;  // e.g. "3 x the longest save seen in this job array (25.0 s)"
};

struct hang_rules {
  std::chrono::milliseconds timeout{0};                  // --hang-timeout; kHangTimeoutAuto: learnt
  std::map<std::string, std::chrono::milliseconds> set;  // --hang-phase-timeout NAME=DURATION
};

// The budget of phase `name` ("" training, "save", or a name the loop marked), given the
// longest it took in this job array so far (ms; 0: never seen to finish). For auto's
// training, pass what earlier tasks recorded only: the first task keeps the first-time
// budget throughout.
hang_budget budget_for(const hang_rules& rules, const std::string& name, std::int64_t longest_ms);

}  // namespace trainctl
