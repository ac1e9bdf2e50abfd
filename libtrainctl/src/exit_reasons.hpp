// The vote's layout, and the exit reasons it carries: one table that the vote, the
// decision and the report's notices are all read from (private to libtrainctl/src).
#pragma once

#include <cstddef>
#include <cstdint>

#include "node_state.hpp"
#include "trainctl/controller.hpp"

namespace trainctl {

// Vote layout: one element per exit reason (0/1), the step times, the freshest EndTime
// read, whether a rank's last save was made as its supervisor went away, then one token
// per switch. The step times ride in the same MAX reduction: the
// slowest rank's work per step (with its rank in the low bits, so the maximum also names
// it) and the negated fastest (so the maximum is the minimum); so does the EndTime news
// (pack_end_news: the maximum is the latest read).
enum vote_index : std::size_t {
  kVoteDeadline = 0,
  kVotePreempted = 1,
  kVoteSignal = 2,
  kVoteMemory = 3,
  kVoteSlowest = 4,
  kVoteNegFastest = 5,
  kVoteHang = 6,
  kVotePeer = 7,
  kVoteEndTime = 8,
  kVoteNoProgress = 9,
  kVoteSavedAsSupervisorWent = 10,  // 1: the exit this brings needs no save (decision::saved)
  kVoteSwitch0 = 11
};

// One row per exit reason that a node-state flag raises, in the order the decision
// picks them when several are agreed on (after the kill switch, before the other exit
// switches): its vote element, its flag, its name in the decision and the run events,
// whether it is a notice on `trainctl report`'s timeline, and whether the loop saves
// on it (decision::saved when not).
struct exit_reason {
  vote_index vote;
  std::uint32_t flag;
  const char* name;
  bool notice;
  bool saves;
};
inline constexpr exit_reason kExitReasons[] = {
    {kVotePreempted, kFlagPreempted, "preempted", true, true},
    {kVoteDeadline, kFlagDeadline, "deadline", true, true},
    // The breaker's own line, not a notice; nothing is new since the checkpoint.
    {kVoteNoProgress, kFlagNoProgress, "no-progress", false, false},
    {kVoteMemory, kFlagMemory, "memory", true, true},
    {kVoteHang, kFlagHang, "hang", true, true},
    {kVotePeer, kFlagPeer, "peer-failed", true, true},
    {kVoteSignal, kFlagSignal, "signal", true, true},
};

}  // namespace trainctl
