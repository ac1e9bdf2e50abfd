// What trainctl drill prints: one row per rehearsed event (what should happen, what did,
// how long it took) and a verdict with advice from what it measured. Pure: the drill's
// orchestration (drill_command.cpp) fills the rows and the figures.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace trainctl {

struct drill_row {
  enum status { kOk, kProblem, kSkipped };
  std::string event;     // "save switch"
  std::string expected;  // what should happen
  std::string happened;  // what did, with the figures
  double seconds = -1;   // how long it took; < 0: not timed
  status how = kOk;
};

// What the verdict is made from.
struct drill_figures {
  std::int64_t lead_ms = 0;  // the script's graceful exit; 0: none
  bool lead_auto = false;
  std::int64_t longest_save_ms = 0;            // the drill's longest save
  std::int64_t longest_quiet_ms = 0;           // a training rank's longest time between check() calls
  std::map<std::string, std::int64_t> phases;  // each phase the loop marked: its longest
  std::int64_t hang_timeout_ms = 0;            // the script's --hang-timeout; 0: off; < 0: auto
  bool never_checked = false;                  // no rank reached check()
  bool false_hang = false;                     // a hang was found before the drill stopped a rank
  bool resumed_at_zero = false;                // task 2 began at step 0 after a save
};

// The advice, one line each, problems first; the last line is the verdict itself.
std::vector<std::string> drill_verdict(const drill_figures& f, const std::vector<drill_row>& rows);

// The rows as an aligned table (event, expected, happened, seconds) with a status column.
std::string drill_table(const std::vector<drill_row>& rows);

// A time the drill measured, as a person reads it: "2.0s" under two minutes, else whole
// seconds ("3m12s"); rounded up, so that as an option's value it is never too short.
std::string drill_duration(std::int64_t ms);

// What a hang's summary line (health/stack_dump's summarize) says of the rank the drill
// stopped: named among the ranks stuck elsewhere than most; no odd one out to name (a
// one-rank job, or frames holding as many ranks each: the stopped rank and the one waiting
// for it in a two-rank job); or not named, which is a problem.
enum class stopped_rank_naming { named, cannot_tell, not_named };
stopped_rank_naming stopped_rank_in_summary(const std::string& summary, int rank);

// Whether the drill found nothing to fix: every row ok or skipped, and no advice that is a problem.
bool drill_clean(const drill_figures& f, const std::vector<drill_row>& rows);

}  // namespace trainctl
