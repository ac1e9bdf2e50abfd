// The heartbeats and phases of the node state and their rules, as code: the only place
// that reads or writes them (scripts/protocol_fields.py fails on a raw access elsewhere).
// A rank's slot also holds its saves (save_fields), its straggler reports and work
// (straggler_fields) and its error (error_fields); claim() clears them all.
//
//   pid        the rank process that holds the slot. Its controller claims a free slot,
//              or one whose process is gone, with a compare-and-swap, clears the rest and
//              stores rank -1 last with release; it gives the slot back (0) at a clean
//              end. A rank that dies keeps it: its supervisor reads its rank and error.
//   step       the last step check() saw: stored at every call (relaxed: a crash's step
//              is the rank's own, not the last agreement's).
//   rank,      the rank's number and the unix ms of its last agreement (0 before the
//   beat_ms    first), stored at each agreement. A reader loads beat_ms with acquire
//              and takes rank and step only from a slot that has one (read()).
//   step_us,   work per step outside check() in the last agreement window, and the
//   slow       agreements in a row this rank was the straggler (step_timing).
//   exiting    1 from the rank's exit decision on: its exit save runs (the supervisor
//              learns from a save the time limit cuts short).
//   phase,     what the rank does, for the hang clock (kPhaseTraining, kPhaseSave,
//   phase_ms   kPhaseWrite, kPhaseNamed + a phase slot), and since when: phase_ms is
//              stored first, phase with release.
//   longest_save_ms, longest_quiet_ms, phases[i].longest_ms
//              the longest save, training stretch between agreements and marked phase
//              of any rank on this node, only raised (compare-and-swap), read by the
//              supervisor's budgets (--hang-timeout=auto, --graceful-exit=auto).
//   phases[i]  a phase name the loop marked, claimed like a switch slot (0 free,
//              1 being written, 2 ready) and never freed.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "node_state.hpp"

namespace trainctl::beat_fields {

// A heartbeat slot for process `pid` (its own slot again if it has one; a free one or
// one whose process is gone otherwise), cleared; -1 when all are taken by live ones.
int claim(node_state& ns, std::int32_t pid);
// The rank ends cleanly: its slot is free for another process.
void release(rank_beat& b);

// The hot path: every check(), and every agreement.
inline void saw_step(rank_beat& b, std::int64_t step) { b.step.store(step, std::memory_order_relaxed); }
inline void agreed(rank_beat& b, std::int32_t rank, std::int64_t now_ms) {
  b.rank.store(rank, std::memory_order_relaxed);
  b.beat_ms.store(now_ms, std::memory_order_release);
}
void set_step_times(rank_beat& b, std::int64_t step_us, std::int32_t slow);
void show_phase(rank_beat& b, std::int32_t phase, std::int64_t since_ms);
void set_exiting(rank_beat& b, bool exiting);

// A slot, copied out. rank and step are meaningful once beat_ms > 0.
struct beat_view {
  std::int32_t pid = 0;
  std::int32_t rank = -1;
  std::int64_t step = 0;
  std::int64_t beat_ms = 0;
  std::int64_t step_us = 0;
  std::int32_t slow = 0;
  bool exiting = false;
  std::int32_t phase = kPhaseTraining;
  std::int64_t phase_ms = 0;
};
beat_view read(const rank_beat& b);
// The slot process `pid` holds, once it has made an agreement; null otherwise.
const rank_beat* of_pid(const node_state& ns, std::int32_t pid);

// What the node learnt: the longest of each, only ever raised.
void learn_save_ms(node_state& ns, std::int64_t ms);
void learn_quiet_ms(node_state& ns, std::int64_t ms);
void learn_phase_ms(node_state& ns, int phase_slot, std::int64_t ms);
std::int64_t longest_save_ms(const node_state& ns);
std::int64_t longest_quiet_ms(const node_state& ns);

// The slot of the loop's phase `name`, claimed when new (lock-free); -1 when all are
// taken by other names or the name is not valid_phase_name.
int claim_phase(node_state& ns, const std::string& name);
// 1 to 31 of [A-Za-z0-9_.-], not starting with '.' or '-'.
bool valid_phase_name(const std::string& name);
// Phase slot `slot`'s name; "" when it holds none.
std::string phase_name(const node_state& ns, int slot);
// Every named phase with the longest it took on this node.
std::vector<std::pair<std::string, std::int64_t>> learnt_phases(const node_state& ns);

// "" when every heartbeat and phase field is one a writer could have left, else which.
std::string bad(const node_state& ns);

}  // namespace trainctl::beat_fields
