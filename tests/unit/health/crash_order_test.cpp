#include "crash_order.hpp"

#include <gtest/gtest.h>

using namespace trainctl;

namespace {

clock_facts same_host() { return {"b00t", false, 16000000}; }

node_presence alive(const std::string& node, std::int64_t touched, clock_facts c = same_host()) {
  return {node, c, touched};
}

// n1 died at 100000 (its line's mtime 100002), in a step of n1, n2, n3.
order_facts crash_on_n1() {
  order_facts f;
  f.me = "n1";
  f.mine_ms = 100000;
  f.mine_fs_ms = 100002;
  f.nodes = {"n1", "n2", "n3"};
  f.node_count = 3;
  f.presences = {alive("n1", 99000), alive("n2", 101000), alive("n3", 103500)};
  return f;
}

}  // namespace

TEST(CrashOrder, FirstWhenEveryOtherNodeLivedOnOrDiedLater) {
  order_facts f = crash_on_n1();
  order_verdict v = judge_order(f);
  EXPECT_TRUE(v.first) << v.why_not;
  EXPECT_EQ(v.lead, "no other node's rank died");
  f.deaths = {{"n2", 100340, 256}};
  v = judge_order(f);
  EXPECT_TRUE(v.first);
  EXPECT_EQ(v.lead, "the next node (n2) 340 ms later; clock skew at most 10 ms, one kernel's clock");
}

TEST(CrashOrder, ANodeGoneBeforeTheCrashBlamesNobodyAndIsNamed) {
  order_facts f = crash_on_n1();
  f.presences[1].touched_ms = 90000;  // n2's supervisor was killed ten seconds before
  f.deaths = {{"n3", 100400, 256}};
  const order_verdict v = judge_order(f);
  EXPECT_FALSE(v.first);
  EXPECT_NE(v.why_not.find("no evidence came from n2 (its last sign of life 10.0 s before this death)"),
            std::string::npos)
      << v.why_not;
  EXPECT_EQ(silent_nodes(f).size(), 1U);
}

TEST(CrashOrder, ANodeThatNeverWroteIsSilentEvenWithoutTheNodeList) {
  order_facts f = crash_on_n1();
  f.presences.pop_back();  // n3: nothing at all
  EXPECT_EQ(silent_nodes(f), std::vector<std::string>{"n3 (no sign of life in this step)"});
  f.nodes.clear();  // SLURM_STEP_NODELIST not readable: counted
  EXPECT_EQ(silent_nodes(f), std::vector<std::string>{"1 more of the step's 3 nodes (no sign of life in this step)"});
}

TEST(CrashOrder, ADeathWithinTheClockAllowanceBlamesNobody) {
  order_facts f = crash_on_n1();
  f.deaths = {{"n2", 100008, 256}, {"n3", 100500, 256}};
  order_verdict v = judge_order(f);
  EXPECT_FALSE(v.first);
  EXPECT_EQ(v.why_not,
            "a rank on n2 ended 8 ms after it (within the 10 ms allowed for clock skew: one kernel's clock)");
  f.skew_override_ms = 5;
  v = judge_order(f);
  EXPECT_TRUE(v.first) << v.why_not;
  EXPECT_NE(v.lead.find("clock skew at most 5 ms, TRAINCTL_CLOCK_SKEW_MS"), std::string::npos);
}

TEST(CrashOrder, ClocksOfTwoKernelsAreBoundedByNtpOrTheOrderCannotBeTold) {
  order_facts f = crash_on_n1();
  f.presences[0].clock = {"a", true, 4500};
  f.presences[1].clock = {"b", true, 6000};
  f.presences[2].clock = {"c", false, 16000000};
  f.deaths = {{"n2", 100030, 256}};
  order_verdict v = judge_order(f);
  EXPECT_TRUE(v.first) << v.why_not;
  EXPECT_NE(v.lead.find("clock skew at most 21 ms, NTP's error bounds 5 + 6 ms"), std::string::npos) << v.lead;
  f.deaths.push_back({"n3", 105000, 256});
  v = judge_order(f);
  EXPECT_FALSE(v.first);
  EXPECT_EQ(
      v.why_not,
      "the order of this death and n3's cannot be told: n3's clock is not synchronized (its kernel's NTP status)");
}

TEST(CrashOrder, ALeaseOnAFileSystemOfClientClocksGetsTheAllowance) {
  order_facts f = crash_on_n1();
  f.presences[1].touched_ms = 99995;  // touched after the death by n2's clock, 7 ms behind
  EXPECT_TRUE(silent_nodes(f).empty());
  f.presences[1].touched_ms = 99900;
  EXPECT_EQ(silent_nodes(f).size(), 1U);
}
