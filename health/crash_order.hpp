// Whether this node's first rank death came first in its step, on the evidence every
// node left in the step's crash evidence (crash_culprit writes and reads it; this is
// the rule alone, with no file or clock of its own, so a test states the facts).
//  - Every node of the step must have given evidence: its first death, or a sign of
//    life since this death (step_presence.hpp). A node with neither may hold the real
//    culprit (a lost node, a killed supervisor, a stalled mount) while this node's
//    rank died of waiting for it: nobody is blamed, and the line names the node.
//  - Another node's death must come later by more than the two clocks may differ: the
//    same kernel's clock, or the bounds NTP keeps (adjtimex), plus kNoticeMs for a
//    supervisor to notice a death; when a clock is not synchronized, the order of
//    deaths on different nodes cannot be told and nobody is blamed.
//    TRAINCTL_CLOCK_SKEW_MS replaces the measured allowance.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "step_presence.hpp"

namespace trainctl {

inline constexpr std::int64_t kNoticeMs = 10;

// Another node's first rank death, as it wrote it into the step's crash evidence.
struct node_death {
  std::string node;
  std::int64_t first_ms = 0;
  int status = -1;  // a wait status; -1 unknown
};

struct order_facts {
  std::string me;
  std::int64_t mine_ms = 0;              // this node's first death, by its own clock
  std::int64_t mine_fs_ms = -1;          // the same, by the file system's clock (its line's mtime); -1 unknown
  std::vector<node_death> deaths;        // the other nodes'
  std::vector<node_presence> presences;  // every node's sign of life, this node's too
  std::vector<std::string> nodes;        // the step's nodes; empty: not known
  int node_count = 1;                    // how many nodes the step has
  std::int64_t skew_override_ms = -1;    // TRAINCTL_CLOCK_SKEW_MS; -1: measured
};

// How much two nodes' clocks may differ: ms (-1: no bound, the order cannot be told)
// and how that was found, for the log.
struct skew_allowance {
  std::int64_t ms = -1;
  std::string how;
};
skew_allowance allowance_between(const std::string& a_node, const clock_facts& a, const std::string& b_node,
                                 const clock_facts& b, std::int64_t override_ms);

// The nodes that gave no evidence, each with what was last seen of it.
std::vector<std::string> silent_nodes(const order_facts& f);

struct order_verdict {
  bool first = false;
  std::string why_not;  // when not: the reason, for "... : no node is blamed"
  std::string lead;     // when first: by how much ("the next node (n3) 340 ms later; ...")
};
order_verdict judge_order(const order_facts& f);

}  // namespace trainctl
