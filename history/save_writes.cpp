#include "save_writes.hpp"
#include "run_event_kinds.hpp"

#include <algorithm>

namespace trainctl {
namespace {

// The newest save of `t` at `step` begun before `ms`, or nullptr.
save_span* save_at(task_report& t, std::int64_t step, std::int64_t ms) {
  for (auto s = t.saves.rbegin(); s != t.saves.rend(); ++s)
    if (s->step == step && s->begin_ms <= ms) return &*s;
  return nullptr;
}

std::string cut_reason(const std::string& why) {
  return why == "job-end" ? "the job's end" : why == "timeout" ? "its wait's bound" : "the run's end";
}

}  // namespace

bool note_write_event(task_report& t, const run_event& e, std::int64_t at_ms) {
  if (e.what != run_event_kind::kCommit && e.what != run_event_kind::kCommitted &&
      e.what != run_event_kind::kWriteCut && e.what != run_event_kind::kWriteFailed)
    return false;
  save_span* s = save_at(t, e.step, at_ms);
  if (s == nullptr) return true;  // a loop's own save trainctl did not time: nothing to add to
  if (e.what == run_event_kind::kCommit || e.what == run_event_kind::kCommitted) {
    // Rank 0's commit (from the save's start), or a node's slowest (from the decision).
    if (e.took_ms >= 0) s->commit_ms = std::max(s->commit_ms, s->begin_ms + e.took_ms);
  } else if (e.what == run_event_kind::kWriteCut) {
    if (s->cut.empty() || e.reason == "job-end") s->cut = e.reason.empty() ? "run-end" : e.reason;
    if (e.took_ms >= 0) s->written_ms = std::max(s->written_ms, e.took_ms);
  } else {
    s->failed = e.text.empty() ? "an error" : e.text;
  }
  return true;
}

void settle_writes(task_report& t) {
  for (save_span& s : t.saves) {
    if (!s.cut.empty() || !s.failed.empty()) {
      s.end_ms = 0;  // never finished: no save to resume from
      s.commit_ms = 0;
    } else if (s.exit && s.end_ms != 0 && s.commit_ms > s.end_ms) {
      s.end_ms = s.commit_ms;  // the rank waited for its write at its end: save time, no training
    }
  }
}

double save_seconds(const save_span& s) {
  const std::int64_t end = s.commit_ms > s.end_ms ? s.commit_ms : s.end_ms;
  return end > s.begin_ms ? static_cast<double>(end - s.begin_ms) / 1000.0 : 0;
}

std::string save_clause(const save_span& s, bool running) {
  std::string ranks;
  for (const std::int64_t r : s.uncommitted) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
  std::string took;
  // Written on after the loop went on (an asynchronous save): its blocking part apart.
  const bool handed_off = s.commit_ms > s.end_ms + 1000 || !s.cut.empty() || !s.failed.empty();
  const std::string blocking =
      handed_off && s.blocking_ms > 0 ? report_span(static_cast<double>(s.blocking_ms) / 1000.0) + " blocking, " : "";
  if (!s.failed.empty()) {
    took = blocking + "its write failed: " + s.failed;
  } else if (!s.cut.empty()) {
    took = blocking + "cut" +
           (s.written_ms > 0 ? " after " + report_span(static_cast<double>(s.written_ms) / 1000.0) : std::string()) +
           " of writing: " + cut_reason(s.cut);
  } else if (!ranks.empty()) {
    took = "not committed by rank" + std::string(s.uncommitted.size() > 1 ? "s " : " ") + ranks;
  } else if (s.end_ms != 0 && s.commit_ms > 0 && handed_off) {
    took = blocking + report_span(save_seconds(s)) + " to commit";
  } else if (s.end_ms != 0) {
    took = report_span(save_seconds(s));
  } else {
    took = running ? "going on" : "never finished";
  }
  return "save at step " + std::to_string(s.step) + " (" + s.reason + ", " + took + ")";
}

void note_fresh_starts(run_report& r) {
  std::int64_t kept = -1;  // the newest save an earlier task kept
  std::string kept_by;
  for (task_report& t : r.tasks) {
    if (t.task.start_ms == 0) continue;
    if (t.first_step == 0 && (t.untrusted_saves > 0 || kept >= 0)) {
      if (t.untrusted_saves > 0)
        t.fresh_start = "started from step 0 although " + std::to_string(t.untrusted_saves) +
                        (t.untrusted_saves == 1 ? " save was" : " saves were") +
                        " there that resume_path could not trust (the task's log says why)";
      else
        t.fresh_start = "started from step 0 although " + kept_by + " committed the save at step " +
                        std::to_string(kept) +
                        " (its checkpoint directory changed, or the loop does not resume "
                        "with trainctl.resume_path)";
    }
    if (t.kept_step > kept) {
      kept = t.kept_step;
      kept_by = t.task.name;
    }
  }
}

}  // namespace trainctl
