// A rank's straggler reports and work with both sides in one test: its controller
// reports and adds, the node's supervisor records each new report and prices the work.
#include "straggler_fields.hpp"

#include <gtest/gtest.h>

#include <memory>

using namespace trainctl;

TEST(StragglerFields, EachReportIsSeenOnceWithItsFigures) {
  auto ns = std::make_unique<node_state>();
  rank_beat& b = ns->beats[0];
  EXPECT_EQ(straggler_fields::last_report(b).reports, 0);
  straggler_fields::report(b, 120, 300'000, 100'000);
  straggler_fields::straggler_report r = straggler_fields::last_report(b);
  EXPECT_EQ(r.reports, 1);
  EXPECT_EQ(r.step, 120);
  EXPECT_EQ(r.slow_us, 300'000);
  EXPECT_EQ(r.fastest_us, 100'000);
  straggler_fields::report(b, 180, 310'000, 100'000);
  EXPECT_EQ(straggler_fields::last_report(b).reports, 2) << "a new report: the supervisor records it";
}

TEST(StragglerFields, WorkAddsUpOverTheTimedWindows) {
  auto ns = std::make_unique<node_state>();
  rank_beat& b = ns->beats[0];
  straggler_fields::add_work(b, 10, 100, 300, true);
  straggler_fields::add_work(b, 20, 200, 300, true);
  const straggler_fields::work_totals w = straggler_fields::work(b);
  EXPECT_EQ(w.timed_steps, 30);
  EXPECT_EQ(w.total_us, 10 * 100 + 20 * 200);
  EXPECT_EQ(w.slowest_total_us, 30 * 300);
  EXPECT_TRUE(w.marked);
  straggler_fields::clear(b);
  EXPECT_EQ(straggler_fields::work(b).timed_steps, 0);
  EXPECT_TRUE(straggler_fields::sane(b));
}
