#include "first_death.hpp"

#include <cctype>
#include <cstdio>

#include "crash_order.hpp"

namespace trainctl {

namespace {

// The clock a death's `at` was read on, as its supervisor said (empty where it did not:
// lines of an older trainctl).
clock_facts clock_of_death(const run_event& e) {
  clock_facts c;
  if (e.figure("boot") >= 0) c.boot = std::to_string(e.figure("boot"));
  c.max_error_us = e.figure("max_error_us");
  c.synced = e.figure("synced", 0) == 1;
  return c;
}

// A rank that died of a closed connection ended because a peer did (or closed its group)
// first: gloo's "Connection closed by peer", a reset, a broken pipe, NCCL's remote error.
bool died_of_closed_connection(const std::string& error) {
  std::string e = error;
  for (char& c : e) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* cause :
       {"connection closed by peer", "connection reset by peer", "broken pipe", "remote process exited"})
    if (e.find(cause) != std::string::npos) return true;
  return false;
}

// How long after a closed connection's death the rank that caused it may end: a crashed
// rank's teardown (its traceback, a `finally` that closes its process group, the
// interpreter's exit) closes its connections before the rank ends, by up to seconds under load.
constexpr std::int64_t kTeardownMs = 10'000;

}  // namespace

// When each death came: `at`, else when it was written.
void first_death_of(task_report& t, const std::vector<const run_event*>& deaths) {
  const auto at = [](const run_event* e) { return e->figure("at", e->ms); };
  const run_event* first = nullptr;
  for (const run_event* e : deaths)
    if (first == nullptr || at(e) < at(first)) first = e;
  if (first == nullptr) return;
  auto& d = t.first_death;
  if (died_of_closed_connection(first->text)) {
    const run_event* cause = nullptr;
    for (const run_event* e : deaths)
      if (e->node != first->node && !died_of_closed_connection(e->text) && at(e) - at(first) <= kTeardownMs &&
          (cause == nullptr || at(e) < at(cause)))
        cause = e;
    if (cause != nullptr) {
      d.lost_peer.rank = first->figure("rank");
      d.lost_peer.node = first->node;
      d.lost_peer.before_s = static_cast<double>(at(cause) - at(first)) / 1000.0;
      first = cause;
    }
  }
  d.ms = at(first);
  d.rank = first->figure("rank");
  d.node = first->node;
  d.how = first->reason == "exit" ? "exit status " + std::to_string(first->figure("status", 1)) : first->reason;
  d.error = first->text;
  const run_event* next = nullptr;
  for (const run_event* e : deaths)
    if (e->node != first->node && at(e) >= d.ms) {
      const double lead = static_cast<double>(at(e) - d.ms) / 1000.0;
      if (d.lead_s < 0 || lead < d.lead_s) {
        d.lead_s = lead;
        next = e;
      }
    }
  if (next == nullptr) return;
  const clock_facts a = clock_of_death(*first), b = clock_of_death(*next);
  if ((a.boot.empty() && a.max_error_us < 0) || (b.boot.empty() && b.max_error_us < 0)) return;  // not said
  const skew_allowance s = allowance_between(first->node, a, next->node, b, -1);
  d.skew_s = s.ms < 0 ? -1 : static_cast<double>(s.ms) / 1000.0;
  d.skew_how = s.how;
}

// The first death's clause of a task's detail line ("" when none was recorded).
std::string first_death_clause(const task_report::death& d) {
  if (d.ms == 0) return "";
  const auto span = [](double s) {
    char text[32];
    if (s < 1)
      std::snprintf(text, sizeof text, "%.0f ms", s * 1000);
    else
      std::snprintf(text, sizeof text, "%s", report_span(s).c_str());
    return std::string(text);
  };
  const auto who = [](std::int64_t rank, const std::string& node) {
    return (rank >= 0 ? "rank " + std::to_string(rank) : std::string("a rank")) + (node.empty() ? "" : " on " + node);
  };
  std::string s = " " + who(d.rank, d.node);
  if (d.lost_peer.rank >= 0 || !d.lost_peer.node.empty())
    s += " died (" + d.how + "), the first of its own cause";
  else if (d.lead_s < 0)
    s += " died first (" + d.how + ")";
  else if (d.skew_s < 0)
    s += " died (" + d.how + ") " + span(d.lead_s) + " before a rank of another node, but " + d.skew_how +
         ": maybe not first";
  else if (d.lead_s > d.skew_s)
    s += " died first (" + d.how + "), " + span(d.lead_s) + " before the next node's" +
         (d.skew_how.empty() ? "" : " (clock skew at most " + span(d.skew_s) + ", " + d.skew_how + ")");
  else
    s += " died (" + d.how + ") " + span(d.lead_s) + " before a rank of another node, within the nodes' clock skew" +
         (d.skew_how.empty() ? "" : " (at most " + span(d.skew_s) + ", " + d.skew_how + ")") + ": maybe not first";
  if (!d.error.empty()) s += ": `" + d.error + "`";
  if (d.lost_peer.rank >= 0 || !d.lost_peer.node.empty())
    s += "; " + who(d.lost_peer.rank, d.lost_peer.node) + " died " + span(d.lost_peer.before_s) +
         " before it, of a closed connection (a peer's end)";
  return s + ";";
}

}  // namespace trainctl
