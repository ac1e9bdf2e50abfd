// Whether the ranks of this node committed the last save trainctl asked them for (each
// rank's ctl.saved(step, path) after its part is written), judged by the node state's
// publisher as the run ends: one line in the task's log and run events for
// `trainctl report`. A node whose ranks committed no save in this run says nothing: its
// loop does not call saved(), and a missing commit would be no evidence.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace trainctl {

// One rank's heartbeat slot, as it ended: steps -1 when none.
struct rank_save {
  std::int32_t rank = -1;
  std::int64_t asked_step = -1;  // the last save trainctl asked for (a save, an exit's save)
  std::int64_t asked_ms = 0;     // unix ms
  std::int64_t committed_step = -1;
  std::int64_t committed_ms = 0;
  // A write of an asynchronous save still pending as the run ended (the oldest): its
  // step (-1: none) and when that save began (unix ms). The run's end cut it.
  std::int64_t pending_step = -1;
  std::int64_t pending_ms = 0;
};

struct save_commits {
  std::int64_t step = -1;         // the save asked last (every rank was asked for the same one)
  std::vector<rank_save> done;    // committed it
  std::vector<rank_save> missed;  // did not (their committed_step: the last they did in this run)
  std::int64_t slowest_ms = -1;   // the latest commit, after it was asked
  std::vector<rank_save> cut;     // ranks whose write was still pending as the run ended
};

// nullopt when no rank was asked for a save, none committed any in this run, and no
// write was cut.
std::optional<save_commits> judge_save_commits(const std::vector<rank_save>& ranks);

// The task log's line for the writes the run's end cut ("" when none), without the
// "trainctl: " prefix; `now_ms`: the run's end.
std::string cut_writes_line(const save_commits& c, const std::string& node, std::int64_t now_ms);

// The task log's line for node `node`, without the "trainctl: " prefix.
std::string save_commits_line(const save_commits& c, const std::string& node);

// Run events (each line ending in '\n'): `committed step=S ms=T node=N ranks=K` for the
// ranks that committed, `uncommitted step=S node=N rank=R [last=L]` for each that did
// not (L: the last save it committed in this run), and `write_cut step=S ms=T node=N
// rank=R` for each write the run's end cut (T: how long it had been written).
std::string save_commits_events(const save_commits& c, const std::string& job, const std::string& node,
                                std::int64_t now_ms);

}  // namespace trainctl
