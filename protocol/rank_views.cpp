#include "rank_views.hpp"

#include <map>

namespace trainctl {

std::vector<rank_view> newest_rank_views(const node_state& ns) {
  std::map<std::int32_t, rank_view> newest;
  for (const rank_beat& b : ns.beats) {
    rank_view v;
    v.rank = b.rank.load(std::memory_order_acquire);
    v.beat_ms = b.beat_ms.load(std::memory_order_relaxed);
    // A slot no process ever checked in from is all zeros: no rank 0.
    const auto seen = newest.find(v.rank);
    if (v.rank < 0 || v.beat_ms <= 0 || (seen != newest.end() && seen->second.beat_ms >= v.beat_ms)) continue;
    v.pid = b.pid.load(std::memory_order_relaxed);
    v.step = b.step.load(std::memory_order_relaxed);
    v.step_us = b.step_us.load(std::memory_order_relaxed);
    v.straggler_reports = b.straggler.reports.load(std::memory_order_acquire);
    v.asked_step = b.saves.asked_step1.load(std::memory_order_acquire) - 1;
    v.asked_ms = b.saves.asked_ms.load(std::memory_order_relaxed);
    v.committed_step = b.saves.committed_step1.load(std::memory_order_acquire) - 1;
    v.committed_ms = b.saves.committed_ms.load(std::memory_order_relaxed);
    if (b.saves.pending.load(std::memory_order_acquire) > 0) {
      v.pending_step = b.saves.pending_step1.load(std::memory_order_relaxed) - 1;
      v.pending_ms = b.saves.pending_ms.load(std::memory_order_relaxed);
    }
    newest[v.rank] = v;
  }
  std::vector<rank_view> out;
  out.reserve(newest.size());
  for (const auto& [rank, v] : newest) out.push_back(v);
  return out;
}

}  // namespace trainctl
