// A rank's straggler reports and the work its price is counted from, fields of its
// heartbeat slot, and their rules as code: the only place that reads or writes them
// (scripts/protocol_fields.py fails on a raw access elsewhere).
//
//   straggler.step, .slow_us, .fastest_us, .reports
//                  the last finding against this rank (the agreement named it the
//                  straggler): its controller stores the step and both step times, then
//                  bumps reports with release. The node's supervisor loads reports with
//                  acquire and records each new one (straggler_record.hpp).
//   work.total_us, .slowest_total_us, .timed_steps, work_marked
//                  over the agreement windows timed so far: this rank's work and the
//                  slowest rank's (agreed, the same on every rank), and their steps,
//                  added by rank's controller (timed_steps last, with release); whether
//                  the loop marks its compute. The supervisor writes them in the run
//                  events as it ends, for `trainctl report`'s price of a straggler.
#pragma once

#include <cstdint>

#include "node_state.hpp"

namespace trainctl::straggler_fields {

void report(rank_beat& b, std::int64_t step, std::int64_t slow_us, std::int64_t fastest_us);

struct straggler_report {
  std::int64_t reports = 0;  // how many so far; 0 none
  std::int64_t step = 0, slow_us = 0, fastest_us = 0;
};
straggler_report last_report(const rank_beat& b);

// `steps` more steps at `work_us` each for this rank, `slowest_us` for the slowest.
void add_work(rank_beat& b, std::int64_t steps, std::int64_t work_us, std::int64_t slowest_us, bool marked);

struct work_totals {
  std::int64_t timed_steps = 0, total_us = 0, slowest_total_us = 0;
  bool marked = false;
};
work_totals work(const rank_beat& b);

// A new process's slot starts with none (beat_fields::claim).
void clear(rank_beat& b);
// Every field within what the controller stores: part of damage().
bool sane(const rank_beat& b);

}  // namespace trainctl::straggler_fields
