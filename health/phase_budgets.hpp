// The hang budgets of one node's ranks, as a run learns them (the rules themselves are
// hang_budget.hpp): what earlier tasks of the job array recorded (the store, read at the
// start), what this node's ranks measured (the node state), and each phase's budget said
// once in the log. The node's publisher records a longer time for the next task.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "hang_budget.hpp"
#include "node_state.hpp"
#include "run_options.hpp"

namespace trainctl {

class phase_budgets {
 public:
  using log_fn = std::function<void(const std::string&)>;
  phase_budgets(const supervisor_options& o, log_fn log);

  // The job array's store of phase times; "" when there is none (no job).
  const std::string& store_path() const { return store_; }
  // The store held `ms` for phase `name` at the start.
  void take_recorded(const std::string& name, std::int64_t ms);
  // Whether this supervisor records for the next task (the node's publisher).
  void set_records(std::function<bool()> f) { records_ = std::move(f); }
  // What the ranks measured (the node state's longest save, quiet time and phases)
  // raises the budgets.
  void learn(const node_state& ns);
  // The budget of phase `name` ("" training, "save", a marked phase, "?" one past the
  // node state's table), said in the log the first time a rank is seen in it with this
  // budget (a learnt budget grows, and is said again).
  hang_budget budget_of(const std::string& name);
  // The shortest budget of any phase: how often a hang is looked for.
  std::chrono::milliseconds shortest() const { return std::min(training_, shortest_phase_); }
  // The phase a beat slot shows, by name: "" training, "save", the loop's name, or "?".
  static std::string phase_name(const node_state& ns, std::int32_t phase);

 private:
  const supervisor_options& opts_;
  log_fn log_;
  hang_rules rules_;
  std::string store_;
  std::map<std::string, std::int64_t> learnt_;    // the longest of each phase known (store + node state)
  std::map<std::string, std::int64_t> recorded_;  // the longest known to be in the store
  std::map<std::string, std::int64_t> said_;      // the budget last said in the log, per phase
  std::function<bool()> records_;
  std::chrono::milliseconds training_{0}, shortest_phase_{0};
  std::int64_t quiet_before_ = 0;  // the longest training quiet time earlier tasks recorded (auto)
};

}  // namespace trainctl
