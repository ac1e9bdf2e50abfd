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

// Which clock judges a rank, from its heartbeat slot: the time of its last agreement
// (`beat_ms`, 0 before its first) and of its last phase change (`phase_ms`), and the
// phase it is in (`training`: none open).
//   hang_clock: since when its phase's budget runs (the later of the two); 0 while the
//     start clock judges it instead.
//   start_clock: before its first agreement and outside any phase, since when
//     --hang-start-timeout runs: the end of a phase it marked before (a checkpoint
//     restore), else 0 (the process's own start). A phase that ended before the first
//     agreement must not hand the rest of the start-up (the first data load, a compile)
//     to the training budget.
struct rank_clocks {
  std::int64_t hang_clock = 0;
  std::int64_t start_clock = 0;
  bool started = false;  // judged by the hang clock (an agreement made, or a phase open)
  bool agreed = false;   // it reached its first agreement: the start clock is done with it
};
rank_clocks clocks_of(std::int64_t beat_ms, bool training, std::int64_t phase_ms);

}  // namespace trainctl
