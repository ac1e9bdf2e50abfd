// The breaker's fields with both sides in one test: the supervisor arms it, a rank reads
// the armed step at its first check().
#include "breaker_fields.hpp"

#include <gtest/gtest.h>

#include <memory>

using namespace trainctl;

TEST(BreakerFields, ArmedByTheSupervisorReadByTheRank) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  EXPECT_EQ(breaker_fields::armed_step(*ns), -1) << "not armed";
  const std::uint32_t seq = ns->seq.load();
  breaker_fields::arm(*ns, 0, 3);
  EXPECT_EQ(breaker_fields::armed_step(*ns), 0) << "step 0 is a step: stored as 1";
  EXPECT_GT(ns->seq.load(), seq);
  breaker_fields::arm(*ns, 120, 2);
  EXPECT_EQ(breaker_fields::armed_step(*ns), 120);
}

TEST(BreakerFields, AStateNoSupervisorWroteIsNotArmed) {
  auto ns = std::make_unique<node_state>();
  init_header(*ns);
  breaker_fields::arm(*ns, 120, 2000);
  EXPECT_EQ(breaker_fields::armed_step(*ns), -1) << "a count no supervisor writes";
  breaker_fields::arm(*ns, 120, 2);
  ns->flags.store(1u << 31);  // an unknown flag: another program's bytes
  EXPECT_EQ(breaker_fields::armed_step(*ns), -1);
  auto zeros = std::make_unique<node_state>();  // no header at all
  zeros->breaker.step1.store(121);
  zeros->breaker.runs.store(2);
  EXPECT_EQ(breaker_fields::armed_step(*zeros), -1);
}
