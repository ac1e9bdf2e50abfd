// A run's hang budgets as it learns them, from typed inputs: the options, what the job
// array's store held, what the node state measured; each budget said once in the log.
#include "phase_budgets.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "save_times.hpp"

namespace trainctl {
namespace {

using std::chrono::milliseconds;

struct budgets_test : ::testing::Test {
  supervisor_options opts;
  std::vector<std::string> lines;
  node_state ns{};
  budgets_test() {
    opts.hang.timeout = milliseconds(600000);  // 10m
    init_header(ns);
  }
  phase_budgets make() {
    return phase_budgets(opts, [this](const std::string& l) { lines.push_back(l); });
  }
  void name_phase(int slot, const char* name, std::int64_t longest_ms) {
    std::strncpy(ns.phases[slot].name, name, sizeof ns.phases[slot].name - 1);
    ns.phases[slot].longest_ms.store(longest_ms);
    ns.phases[slot].state.store(2);
  }
};

TEST_F(budgets_test, training_is_the_hang_timeout_and_is_not_said) {
  phase_budgets b = make();
  EXPECT_EQ(b.budget_of("").budget, milliseconds(600000));
  EXPECT_TRUE(lines.empty()) << "the user's own --hang-timeout needs no line";
}

TEST_F(budgets_test, a_save_never_seen_gets_the_first_time_budget_said_once) {
  phase_budgets b = make();
  EXPECT_EQ(b.budget_of("save").budget, kFirstPhaseBudget);
  EXPECT_EQ(b.budget_of("save").budget, kFirstPhaseBudget);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("a rank saving counts as hung after 30m"), std::string::npos) << lines[0];
}

TEST_F(budgets_test, a_longer_save_measured_raises_its_budget_and_says_it_again) {
  phase_budgets b = make();
  b.take_recorded("save", 240000);  // the store: a 4-minute save in an earlier task
  EXPECT_EQ(b.budget_of("save").budget, milliseconds(720000)) << "3 x 4m";
  ns.longest_save_ms.store(300000);  // this run measured 5 minutes
  b.learn(ns);
  EXPECT_EQ(b.budget_of("save").budget, milliseconds(900000)) << "3 x 5m";
  EXPECT_EQ(lines.size(), 2u) << "the grown budget is said again";
}

TEST_F(budgets_test, a_marked_phase_is_named_and_learnt_from_the_node_state) {
  name_phase(0, "eval", 200000);
  EXPECT_EQ(phase_budgets::phase_name(ns, kPhaseTraining), "");
  EXPECT_EQ(phase_budgets::phase_name(ns, kPhaseSave), "save");
  EXPECT_EQ(phase_budgets::phase_name(ns, kPhaseNamed + 0), "eval");
  EXPECT_EQ(phase_budgets::phase_name(ns, kPhaseNamed + 1), "?") << "a slot nobody claimed";
  EXPECT_EQ(phase_budgets::phase_name(ns, kPhaseNamed + kMaxPhases), "?") << "past the table";
  phase_budgets b = make();
  b.learn(ns);
  EXPECT_EQ(b.budget_of("eval").budget, milliseconds(600000)) << "3 x 200 s, at least --hang-timeout";
  EXPECT_EQ(b.shortest(), milliseconds(600000));
}

TEST_F(budgets_test, a_phase_past_the_table_gets_the_first_time_budget) {
  phase_budgets b = make();
  EXPECT_EQ(b.budget_of("?").budget, kFirstPhaseBudget);
}

TEST_F(budgets_test, a_set_phase_budget_wins_over_what_is_learnt) {
  opts.hang.phase_timeouts["save"] = milliseconds(120000);
  phase_budgets b = make();
  ns.longest_save_ms.store(300000);
  b.learn(ns);
  EXPECT_EQ(b.budget_of("save").budget, milliseconds(120000));
  EXPECT_EQ(b.shortest(), milliseconds(120000)) << "the hang is looked for as often as the shortest needs";
}

TEST_F(budgets_test, auto_training_is_learnt_only_from_earlier_tasks) {
  opts.hang.timeout = option::kHangTimeoutAuto;
  phase_budgets b = make();
  EXPECT_EQ(b.budget_of("").budget, kFirstPhaseBudget);
  ns.longest_quiet_ms.store(30000);
  b.learn(ns);
  EXPECT_EQ(b.budget_of("").budget, kFirstPhaseBudget) << "this task keeps its first-time budget";
  phase_budgets next = make();
  next.take_recorded(kQuietPhase, 30000);
  EXPECT_EQ(next.budget_of("").budget, milliseconds(150000)) << "the next task: 5 x 30 s";
}

TEST_F(budgets_test, nothing_is_recorded_by_a_supervisor_that_does_not_publish) {
  opts.job_id = "123";
  phase_budgets b = make();
  b.set_records([] { return false; });
  ns.longest_save_ms.store(300000);
  b.learn(ns);
  for (const auto& l : lines) EXPECT_EQ(l.find("cannot keep"), std::string::npos) << l;
}

}  // namespace
}  // namespace trainctl
