#include "crash_order.hpp"

#include <algorithm>
#include <set>

namespace trainctl {
namespace {

const node_presence* presence_of(const order_facts& f, const std::string& node) {
  for (const auto& p : f.presences)
    if (p.node == node) return &p;
  return nullptr;
}

const node_death* death_of(const order_facts& f, const std::string& node) {
  for (const auto& d : f.deaths)
    if (d.node == node) return &d;
  return nullptr;
}

clock_facts clock_of(const order_facts& f, const std::string& node) {
  const node_presence* p = presence_of(f, node);
  return p != nullptr ? p->clock : clock_facts{};
}

std::string seconds_text(std::int64_t ms) {
  return std::to_string(ms / 1000) + "." + std::to_string((ms % 1000) / 100) + " s";
}

}  // namespace

skew_allowance allowance_between(const std::string& a_node, const clock_facts& a, const std::string& b_node,
                                 const clock_facts& b, std::int64_t override_ms) {
  if (override_ms >= 0) return {override_ms, "TRAINCTL_CLOCK_SKEW_MS"};
  if (!a.boot.empty() && a.boot == b.boot) return {kNoticeMs, "one kernel's clock"};
  for (const auto* c : {&a, &b}) {
    const std::string& node = c == &a ? a_node : b_node;
    if (c->max_error_us < 0) return {-1, node + "'s clock is not known"};
    if (!c->synced) return {-1, node + "'s clock is not synchronized (its kernel's NTP status)"};
  }
  const std::int64_t bound = (a.max_error_us + b.max_error_us + 999) / 1000;
  return {bound + kNoticeMs, "NTP's error bounds " + std::to_string((a.max_error_us + 999) / 1000) + " + " +
                                 std::to_string((b.max_error_us + 999) / 1000) + " ms"};
}

std::vector<std::string> silent_nodes(const order_facts& f) {
  std::vector<std::string> nodes = f.nodes;
  if (nodes.empty()) {  // the list is not known: the nodes that wrote something
    std::set<std::string> seen;
    for (const auto& d : f.deaths) seen.insert(d.node);
    for (const auto& p : f.presences) seen.insert(p.node);
    nodes.assign(seen.begin(), seen.end());
  }
  std::vector<std::string> out;
  int heard = 1;  // this node
  const clock_facts mine = clock_of(f, f.me);
  for (const std::string& n : nodes) {
    if (n == f.me) continue;
    if (death_of(f, n) != nullptr) {
      ++heard;
      continue;
    }
    const node_presence* p = presence_of(f, n);
    // Touched since this death, by the file system's clock (its own clients' clocks on
    // some file systems: give them the nodes' allowance).
    const std::int64_t skew = std::max<std::int64_t>(0, allowance_between(f.me, mine, n, clock_of(f, n), -1).ms);
    if (p != nullptr && f.mine_fs_ms >= 0 && p->touched_ms + skew >= f.mine_fs_ms) {
      ++heard;
      continue;
    }
    if (p == nullptr)
      out.push_back(n + " (no sign of life in this step)");
    else if (f.mine_fs_ms < 0)
      out.push_back(n + " (this death's time on the file system is not known)");
    else
      out.push_back(n + " (its last sign of life " + seconds_text(f.mine_fs_ms - p->touched_ms) +
                    " before this death)");
  }
  if (f.nodes.empty() && heard < f.node_count)
    out.push_back(std::to_string(f.node_count - heard) + " more of the step's " + std::to_string(f.node_count) +
                  " nodes (no sign of life in this step)");
  return out;
}

order_verdict judge_order(const order_facts& f) {
  order_verdict v;
  const std::vector<std::string> silent = silent_nodes(f);
  if (!silent.empty()) {
    std::string list;
    for (const auto& s : silent) list += (list.empty() ? "" : ", ") + s;
    v.why_not = "no evidence came from " + list +
                ": the culprit may be there (a lost node, a killed supervisor, a stalled log directory) while this "
                "node's rank died of waiting for it";
    return v;
  }
  const clock_facts mine = clock_of(f, f.me);
  const node_death* next = nullptr;
  skew_allowance next_skew;
  for (const node_death& d : f.deaths) {
    const skew_allowance a = allowance_between(f.me, mine, d.node, clock_of(f, d.node), f.skew_override_ms);
    if (a.ms < 0) {
      v.why_not = "the order of this death and " + d.node + "'s cannot be told: " + a.how;
      return v;
    }
    if (d.first_ms <= f.mine_ms + a.ms) {
      const std::int64_t gap = f.mine_ms - d.first_ms;
      v.why_not = "a rank on " + d.node + " ended " +
                  (gap >= 0 ? std::to_string(gap) + " ms before it" : std::to_string(-gap) + " ms after it") +
                  " (within the " + std::to_string(a.ms) + " ms allowed for clock skew: " + a.how + ")";
      return v;
    }
    if (next == nullptr || d.first_ms < next->first_ms) {
      next = &d;
      next_skew = a;
    }
  }
  v.first = true;
  v.lead = next == nullptr
               ? "no other node's rank died"
               : "the next node (" + next->node + ") " + std::to_string(next->first_ms - f.mine_ms) +
                     " ms later; clock skew at most " + std::to_string(next_skew.ms) + " ms, " + next_skew.how;
  return v;
}

}  // namespace trainctl
