#include "phase_budgets.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "beat_fields.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "node_names.hpp"
#include "parse.hpp"
#include "save_times.hpp"

namespace trainctl {

phase_budgets::phase_budgets(const supervisor_options& o, log_fn log) : opts_(o), log_(std::move(log)) {
  rules_.timeout = o.hang.timeout;
  rules_.set = o.hang.phase_timeouts;
  // One store per job array (or job): the budgets carry over to its next task.
  const std::string id = env_or(env_var::kSlurmArrayJobId, o.job_id);
  if (!o.job_id.empty()) store_ = save_times_path(id);
  training_ = shortest_phase_ = budget_for(rules_, "", 0).budget;
}

void phase_budgets::take_recorded(const std::string& name, std::int64_t ms) {
  learnt_[name] = recorded_[name] = std::max<std::int64_t>(learnt_[name], ms);
  if (name == kQuietPhase) quiet_before_ = ms;
}

std::string phase_budgets::phase_name(const node_state& ns, std::int32_t phase) {
  if (phase == kPhaseTraining) return "";
  if (phase == kPhaseSave || phase == kPhaseWrite) return "save";  // a write is judged by the save's budget
  // Past the node state's table, or a slot not written: nothing learnt.
  const std::string name = beat_fields::phase_name(ns, phase - kPhaseNamed);
  return name.empty() ? "?" : name;
}

void phase_budgets::learn(const node_state& ns) {
  std::vector<std::pair<std::string, std::int64_t>> seen{{"save", beat_fields::longest_save_ms(ns)},
                                                         {kQuietPhase, beat_fields::longest_quiet_ms(ns)}};
  for (auto& phase : beat_fields::learnt_phases(ns)) seen.push_back(std::move(phase));
  for (const auto& [name, ms] : seen) {
    if (ms <= learnt_[name] || ms >= std::int64_t{7} * 24 * 3600 * 1000) continue;
    learnt_[name] = ms;
    // --graceful-exit=auto records saves itself; only the node's publisher writes.
    const bool records = records_ && records_() && !store_.empty() &&
                         !(name == "save" && opts_.graceful_exit == option::kGracefulExitAuto);
    if (!records || ms <= recorded_[name]) continue;
    const std::string why = record_phase_time(store_, opts_.job_id, node_name(), name, ms);
    if (why.empty())
      recorded_[name] = ms;
    else
      log_("hang: cannot keep the " + (name == kQuietPhase ? std::string("training") : name) +
           " time for the next task: " + why);
  }
  training_ = budget_for(rules_, "", quiet_before_).budget;
  shortest_phase_ = training_;
  for (const auto& [name, ms] : learnt_)
    if (name != kQuietPhase) shortest_phase_ = std::min(shortest_phase_, budget_for(rules_, name, ms).budget);
}

hang_budget phase_budgets::budget_of(const std::string& name) {
  hang_budget out = name == "?"
                        ? hang_budget{std::max(training_, kFirstPhaseBudget), "a phase past the node state's table"}
                        : budget_for(rules_, name, name.empty() ? quiet_before_ : learnt_[name]);
  std::int64_t& said = said_[name];
  if (said != out.budget.count() && !(name.empty() && opts_.hang.timeout.count() > 0)) {
    said = out.budget.count();
    log_("hang: a rank " +
         (name.empty()     ? std::string("training")
          : name == "save" ? "saving"
                           : "in phase '" + name + "'") +
         " counts as hung after " + format_duration(out.budget) + " (" + out.why + ")");
  }
  return out;
}

}  // namespace trainctl
