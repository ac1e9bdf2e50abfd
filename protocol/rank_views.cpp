#include "rank_views.hpp"

#include <map>

#include "beat_fields.hpp"
#include "save_fields.hpp"
#include "straggler_fields.hpp"

namespace trainctl {

std::vector<rank_view> newest_rank_views(const node_state& ns) {
  std::map<std::int32_t, rank_view> newest;
  for (const rank_beat& b : ns.beats) {
    const beat_fields::beat_view beat = beat_fields::read(b);
    // A slot no process ever checked in from is all zeros: no rank 0.
    const auto seen = newest.find(beat.rank);
    if (beat.rank < 0 || beat.beat_ms <= 0 || (seen != newest.end() && seen->second.beat_ms >= beat.beat_ms)) continue;
    rank_view v;
    v.rank = beat.rank;
    v.beat_ms = beat.beat_ms;
    v.pid = beat.pid;
    v.step = beat.step;
    v.step_us = beat.step_us;
    v.straggler_reports = straggler_fields::last_report(b).reports;
    const save_fields::save_view saves = save_fields::read(b);
    v.asked_step = saves.asked_step;
    v.asked_ms = saves.asked_ms;
    v.committed_step = saves.committed_step;
    v.committed_ms = saves.committed_ms;
    if (saves.pending > 0) {
      v.pending_step = saves.pending_step;
      v.pending_ms = saves.pending_ms;
    }
    newest[v.rank] = v;
  }
  std::vector<rank_view> out;
  out.reserve(newest.size());
  for (const auto& [rank, v] : newest) out.push_back(v);
  return out;
}

}  // namespace trainctl
