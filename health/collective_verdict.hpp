// The hang read across ranks from torch's flight recorder: which collective the ranks
// wait in, and which rank is not in it (behind, in another collective, with other
// sizes), in one sentence for the hang summary. Pure: the digests come from each rank's
// stack file (flight_recorder.hpp collects them, stack_dump.hpp writes and reads them).
#pragma once

#include <string>
#include <vector>

#include "stack_dump.hpp"

namespace trainctl {

// One line of a rank's digest: "pg=0 seq=12 done=0 op=all_reduce at=train.py:88 in=float32 x 4"
// (at=? where torch recorded no stacks: the rank's program's frame is used instead).
struct recorded_collective {
  int pg = 0;
  long long seq = 0;
  bool done = false;  // torch retired it: every rank's part ended
  std::string op, at, in;
};

// Parses a digest line; false for "none ..." and for anything else that is not one.
bool parse_recorded_collective(const std::string& line, recorded_collective* out);

// The sentence, e.g. "ranks 0,1,3 wait in all_reduce #12 (float32 x 4, issued at
// train.py:88); rank 2's last collective is #11: it never entered #12 (its stack: load
// (data.py:40))". "no flight recorder was available (WHY)" when the ranks that answered
// had none; "" when no rank was asked (a loop without torch.distributed). Ranks are
// compared within one process group: the lowest-numbered one in which a collective has
// not completed.
std::string collective_verdict(const std::vector<rank_stack>& stacks);

// `summary` (the stacks' own, hang_verdict.hpp) then "; flight recorder: " and the
// verdict, where there is one: the hang line, trainctl stacks' and its --json's.
std::string with_collectives(const std::string& summary, const std::vector<rank_stack>& stacks);

}  // namespace trainctl
