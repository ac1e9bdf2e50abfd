// A rank's saves and commits, fields of its heartbeat slot, and their rules as code: the
// only place that reads or writes them (scripts/protocol_fields.py fails on a raw access
// elsewhere). Steps are stored as step + 1 so that 0 means none.
//
//   asked_step1, asked_ms        the last save trainctl asked this rank for (a save, or
//                                an exit with a save) and when: stored by its controller
//                                at the agreement, ms first, the step with release.
//   committed_step1, committed_ms  the last save the rank committed (ctl.saved) and
//                                when: ms first, then the step, only ever raised (a
//                                compare-and-swap: an older asynchronous write that ends
//                                late never moves it back).
//   pending, pending_step1, pending_ms  asynchronous writes not yet ended: how many,
//                                and the oldest one's step and start (unix ms); the
//                                count is stored last with release.
//   waiting                      1 while the rank, at its end, waits for its writes.
//
// Read by the node's supervisor: which ranks committed what they were asked for (the
// run's end), a write past the save's budget (a finding, never a kill), a rank at its
// end that waits for a write (not hung); and by its metrics file.
#pragma once

#include <cstdint>

#include "node_state.hpp"

namespace trainctl::save_fields {

void asked(rank_beat& b, std::int64_t step, std::int64_t now_ms);
void committed(rank_beat& b, std::int64_t step, std::int64_t now_ms);
// `count` writes pending, the oldest for `step` begun at `began_ms` (count 0: none).
void pending(rank_beat& b, std::int32_t count, std::int64_t step, std::int64_t began_ms);
void waiting(rank_beat& b, bool waits);

struct save_view {
  std::int64_t asked_step = -1, asked_ms = 0;          // -1: none asked
  std::int64_t committed_step = -1, committed_ms = 0;  // -1: none committed
  std::int32_t pending = 0;                            // writes not yet ended
  std::int64_t pending_step = -1, pending_ms = 0;      // the oldest of them
  bool waiting = false;
};
save_view read(const rank_beat& b);

// A new process's slot starts with none (beat_fields::claim).
void clear(rank_beat& b);
// Every field within what the controller stores: part of damage().
bool sane(const rank_beat& b);

}  // namespace trainctl::save_fields
