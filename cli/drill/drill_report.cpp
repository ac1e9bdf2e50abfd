#include "drill_report.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "hang_budget.hpp"
#include "hang_verdict.hpp"
#include "options.hpp"
#include "parse.hpp"
#include "save_times.hpp"
#include "stack_dump.hpp"

namespace trainctl {
namespace {

std::string dur(std::int64_t ms) { return drill_duration(ms); }

// As an option's value: whole seconds, rounded up ("34s", "2m", "90s").
std::string value(std::int64_t ms) {
  const std::int64_t s = (std::max<std::int64_t>(ms, 1000) + 999) / 1000;
  return s % 60 == 0 ? std::to_string(s / 60) + "m" : std::to_string(s) + "s";
}

// What an explicit lead needs for the save and the steps measured (common/save_times).
std::int64_t lead_needed(const drill_figures& f) { return lead_needed_ms(f.longest_save_ms, f.longest_quiet_ms); }

// What --graceful-exit=auto leaves for the longest save measured.
std::int64_t auto_lead(std::int64_t save_ms) {
  return std::max<std::int64_t>(
      static_cast<std::int64_t>(kAutoSaveFactor * static_cast<double>(save_ms)) + kAutoMargin.count(),
      kAutoFloor.count());
}

bool save_fits(const drill_figures& f) {
  return f.lead_auto || f.lead_ms == 0 || f.longest_save_ms == 0 || lead_needed(f) <= f.lead_ms;
}

}  // namespace

std::string drill_duration(std::int64_t ms) {
  if (ms < 0) ms = 0;
  if (ms < 120000) {
    char text[32];
    const std::int64_t tenths = (ms + 99) / 100;  // rounded up
    std::snprintf(text, sizeof text, "%lld.%llds", static_cast<long long>(tenths / 10),
                  static_cast<long long>(tenths % 10));
    return text;
  }
  return format_duration(std::chrono::milliseconds((ms + 999) / 1000 * 1000));
}

bool drill_clean(const drill_figures& f, const std::vector<drill_row>& rows) {
  return !f.never_checked && !f.false_hang && !f.resumed_at_zero && save_fits(f) &&
         std::none_of(rows.begin(), rows.end(), [](const drill_row& r) { return r.how == drill_row::kProblem; });
}

std::vector<std::string> drill_verdict(const drill_figures& f, const std::vector<drill_row>& rows) {
  std::vector<std::string> out;
  if (f.never_checked)
    out.push_back(
        "the loop never reached trainctl's check(): no save, notice or switch can reach it; call ctl.check(step) "
        "every step (or use trainctl.hf / trainctl.lightning)");
  if (f.longest_save_ms > f.lead_ms && f.lead_ms > 0 && !f.lead_auto)
    out.push_back("the save took " + dur(f.longest_save_ms) + "; the lead is " + dur(f.lead_ms) +
                  ": a deadline save would be cut; use --graceful-exit=" + value(lead_needed(f)) +
                  " or --graceful-exit=auto");
  else if (!save_fits(f))
    out.push_back("the save took " + dur(f.longest_save_ms) + "; the lead is " + dur(f.lead_ms) +
                  ": too little margin for a slower save; use --graceful-exit=" + value(lead_needed(f)) +
                  " or --graceful-exit=auto");
  if (f.false_hang)
    out.push_back(
        "a hang was found before the drill stopped any rank: part of the loop runs longer than --hang-timeout=" +
        (f.hang_timeout_ms > 0 ? value(f.hang_timeout_ms) : std::string("auto")) +
        " between check() calls (an evaluation? a long save of its own?); mark it, with ctl.phase(\"eval\") around "
        "it, so it has a budget of its own, or raise --hang-timeout");
  if (f.resumed_at_zero)
    out.push_back(
        "task 2 started at step 0 although task 1 had saved: the loop does not resume; load "
        "trainctl.resume_path(CKPT_DIR) at its start");
  // Advice from what was measured, for the real run.
  if (f.lead_ms > 0 && save_fits(f) && f.longest_save_ms > 0)
    out.push_back("graceful exit: the longest save took " + dur(f.longest_save_ms) + "; " +
                  (f.lead_auto ? "--graceful-exit=auto leaves it " + dur(auto_lead(f.longest_save_ms))
                               : "--graceful-exit=" + value(f.lead_ms) + " leaves it room (" + value(lead_needed(f)) +
                                     " would do)"));
  if (f.longest_quiet_ms > 0) {
    hang_rules rules;
    rules.timeout = option::kHangTimeoutAuto;
    const std::int64_t learnt = budget_for(rules, "", f.longest_quiet_ms).budget.count();
    out.push_back("hang timeout: a training rank went at most " + dur(f.longest_quiet_ms) +
                  " between check() calls; --hang-timeout=auto would allow " + value(learnt) +
                  (f.hang_timeout_ms > 0 && f.hang_timeout_ms < f.longest_quiet_ms * 2
                       ? "; --hang-timeout=" + value(f.hang_timeout_ms) + " is too close to it"
                       : ""));
  }
  for (const auto& [name, ms] : f.phases)
    if (name != "restore" || ms > 0)
      out.push_back("phase '" + name + "': took at most " + dur(ms) + "; its hang budget will be " +
                    dur(std::max<std::int64_t>(static_cast<std::int64_t>(kPhaseFactor * static_cast<double>(ms)),
                                               f.hang_timeout_ms > 0 ? f.hang_timeout_ms : 0)) +
                    " (3 x the longest)");
  const bool clean = drill_clean(f, rows);
  const auto problems =
      std::count_if(rows.begin(), rows.end(), [](const drill_row& r) { return r.how == drill_row::kProblem; });
  out.push_back(clean ? "verdict: ready for the long run"
                      : "verdict: fix " + std::string(problems > 0 ? "the rows marked FAIL and " : "") +
                            "the lines above before the long run");
  return out;
}

std::string drill_table(const std::vector<drill_row>& rows) {
  std::size_t w_event = 5, w_expected = 8;
  for (const drill_row& r : rows) {
    w_event = std::max(w_event, r.event.size());
    w_expected = std::max(w_expected, r.expected.size());
  }
  std::string out;
  char line[64];
  const auto row = [&](const std::string& status, const std::string& event, const std::string& expected,
                       const std::string& seconds, const std::string& happened) {
    out += status + std::string(6 - std::min<std::size_t>(status.size(), 5), ' ') + event +
           std::string(w_event + 2 - event.size(), ' ') + expected +
           std::string(w_expected + 2 - expected.size(), ' ') + seconds +
           std::string(8 - std::min<std::size_t>(seconds.size(), 7), ' ') + happened + "\n";
  };
  row("", "event", "expected", "seconds", "happened");
  for (const drill_row& r : rows) {
    std::string s;
    if (r.seconds >= 0) {
      std::snprintf(line, sizeof line, "%.1f", r.seconds);
      s = line;
    }
    row(r.how == drill_row::kOk        ? "ok"
        : r.how == drill_row::kProblem ? "FAIL"
                                       : "skip",
        r.event, r.expected, s, r.happened);
  }
  return out;
}

stopped_rank_naming stopped_rank_in_summary(const std::string& summary, int rank) {
  const std::string who = "rank " + std::to_string(rank) + " on ";
  const size_t elsewhere = summary.find("; elsewhere: ");
  if (elsewhere != std::string::npos && summary.find(who, elsewhere) != std::string::npos)
    return stopped_rank_naming::named;
  if (summary.find(kNoOddOneOut) != std::string::npos || summary.compare(0, 15, "1 of 1 ranks in") == 0)
    return stopped_rank_naming::cannot_tell;
  return stopped_rank_naming::not_named;
}

}  // namespace trainctl
