#include "save_commits.hpp"

#include <algorithm>
#include <cstdio>

#include "run_event_kinds.hpp"
#include "run_events.hpp"

namespace trainctl {
namespace {

std::string rank_list(const std::vector<rank_save>& ranks) {
  std::string out;
  for (const auto& r : ranks) out += (out.empty() ? "" : ",") + std::to_string(r.rank);
  return out;
}

}  // namespace

std::optional<save_commits> judge_save_commits(const std::vector<rank_save>& ranks) {
  save_commits c;
  bool any_committed = false;
  for (const auto& r : ranks) {
    if (r.rank < 0) continue;
    c.step = std::max(c.step, r.asked_step);
    any_committed = any_committed || r.committed_step >= 0;
    if (r.pending_step >= 0) c.cut.push_back(r);
  }
  if ((c.step < 0 || !any_committed) && c.cut.empty()) return std::nullopt;
  if (c.step < 0 || !any_committed) {  // only cut writes to tell: no save to judge
    c.step = -1;
    return c;
  }
  for (const auto& r : ranks) {
    if (r.rank < 0) continue;
    if (r.committed_step >= c.step) {  // a later save of the loop's own holds this one's state too
      c.done.push_back(r);
      if (r.asked_step == c.step) c.slowest_ms = std::max(c.slowest_ms, r.committed_ms - r.asked_ms);
    } else {
      c.missed.push_back(r);
    }
  }
  const auto by_rank = [](const rank_save& a, const rank_save& b) { return a.rank < b.rank; };
  std::sort(c.done.begin(), c.done.end(), by_rank);
  std::sort(c.missed.begin(), c.missed.end(), by_rank);
  std::sort(c.cut.begin(), c.cut.end(), by_rank);
  return c;
}

std::string cut_writes_line(const save_commits& c, const std::string& node, std::int64_t now_ms) {
  if (c.cut.empty()) return "";
  std::string steps;
  for (const auto& r : c.cut) {
    char took[48] = "";
    if (r.pending_ms > 0 && now_ms >= r.pending_ms)
      std::snprintf(took, sizeof took, ", %.1f s after its save began",
                    static_cast<double>(now_ms - r.pending_ms) / 1e3);
    steps += (steps.empty() ? "" : "; ") + std::string("rank ") + std::to_string(r.rank) + ": the save at step " +
             std::to_string(r.pending_step) + took;
  }
  return "the run ended while " + std::string(c.cut.size() == 1 ? "a write was" : "writes were") +
         " still pending on " + (node.empty() ? std::string("this node") : node) + " (" + steps +
         "): cut, not committed; trainctl.resume_path goes back to the newest save every rank committed";
}

std::string save_commits_line(const save_commits& c, const std::string& node) {
  if (c.step < 0) return "";
  const std::string at = "the save at step " + std::to_string(c.step);
  const std::string on = node.empty() ? std::string("this node") : node;
  char after[64] = "";
  if (c.slowest_ms >= 0) std::snprintf(after, sizeof after, ", the last %.1f s after it was asked", c.slowest_ms / 1e3);
  if (c.missed.empty()) return at + " is committed by every rank on " + on + " (" + rank_list(c.done) + ")" + after;
  std::string missed;
  for (const auto& r : c.missed)
    missed += (missed.empty() ? "" : ", ") + std::to_string(r.rank) + " (" +
              (r.committed_step >= 0 ? "its last committed save in this run: step " + std::to_string(r.committed_step)
                                     : std::string("no save committed in this run")) +
              ")";
  return at + " is not committed by rank" + (c.missed.size() > 1 ? "s " : " ") + missed + " on " + on +
         (c.done.empty() ? "" : "; committed by " + rank_list(c.done)) +
         ": trainctl.resume_path goes back to the newest save every rank committed";
}

std::string save_commits_events(const save_commits& c, const std::string& job, const std::string& node,
                                std::int64_t now_ms) {
  std::string lines;
  run_event e = make_run_event(run_event_kind::kCommitted, job, now_ms);
  e.node = node;
  e.step = c.step;
  if (!c.done.empty()) {
    e.took_ms = c.slowest_ms;
    e.figures = {{"ranks", static_cast<std::int64_t>(c.done.size())}};
    lines += format_run_event(e);
  }
  e.what = run_event_kind::kUncommitted;
  e.took_ms = -1;
  for (const auto& r : c.missed) {
    e.figures = {{"rank", r.rank}, {"last", r.committed_step}};  // last < 0: not written
    lines += format_run_event(e);
  }
  e.what = run_event_kind::kWriteCut;
  for (const auto& r : c.cut) {
    e.step = r.pending_step;
    e.took_ms = r.pending_ms > 0 && now_ms >= r.pending_ms ? now_ms - r.pending_ms : -1;
    e.figures = {{"rank", r.rank}};
    lines += format_run_event(e);
  }
  return lines;
}

}  // namespace trainctl
