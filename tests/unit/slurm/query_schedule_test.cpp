#include "query_schedule.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <random>
#include <set>

using namespace trainctl;

namespace {

query_slots node(std::int64_t i, std::int64_t n, const std::string& job = "4242") {
  query_slots s;
  for (unsigned char c : job) s.job_hash = (s.job_hash ^ c) * 1099511628211ULL + 7;
  s.node = i;
  s.nodes = n;
  s.seed = 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(i);
  return s;
}

}  // namespace

// Up to 60 nodes, no two ever ask in the same wall-clock second, whatever each asked
// for and whenever: each owns its own seconds.
TEST(QuerySchedule, UpToSixtyNodesNeverShareASecond) {
  std::mt19937_64 rng(7);
  for (std::int64_t n : {2, 3, 7, 60}) {
    std::vector<query_slots> nodes;
    for (std::int64_t i = 0; i < n; ++i) nodes.push_back(node(i, n));
    std::map<std::int64_t, std::int64_t> owner;  // second -> node
    const std::int64_t base = 1'790'000'000'000;
    for (int round = 0; round < 200; ++round)
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t want = base + static_cast<std::int64_t>(rng() % 3'600'000);
        const std::int64_t at = in_own_second(nodes[i], want);
        ASSERT_GE(at, want);
        ASSERT_LT(at, want + own_cycle_ms(nodes[i]) + 1000) << "never more than one cycle late";
        const auto it = owner.emplace(at / 1000, i).first;
        ASSERT_EQ(it->second, i) << n << " nodes: nodes " << it->second << " and " << i << " in second " << at / 1000;
      }
  }
}

// The periodic reads: one per period per node (12 an hour at 5 minutes), spread so that
// a 1,000-node job asks a few times a second, never in a burst of all its nodes.
TEST(QuerySchedule, PeriodicReadsAreOnePerPeriodAndSpreadOverIt) {
  for (std::int64_t n : {3, 1000}) {
    const std::int64_t period = 300'000, start = 1'790'000'123'456, hour = 3'600'000;
    std::map<std::int64_t, int> per_second, steady;  // steady: after the first reads
    int most_per_node = 0, least_per_node = 1 << 30;
    for (std::int64_t i = 0; i < n; ++i) {
      query_slots s = node(i, n, "981");
      int reads = 0;
      for (std::int64_t t = in_own_second(s, start + 1000); t < start + hour;
           t = next_periodic_ms(s, period, t + period / 2)) {
        ++reads;
        ++per_second[t / 1000];
        if (t > start + 2 * kMaxOwnCycle * 1000) ++steady[t / 1000];
      }
      most_per_node = std::max(most_per_node, reads);
      least_per_node = std::min(least_per_node, reads);
    }
    int burst = 0, steady_burst = 0;
    for (const auto& [sec, count] : per_second) burst = std::max(burst, count);
    for (const auto& [sec, count] : steady) steady_burst = std::max(steady_burst, count);
    EXPECT_LE(most_per_node, 13) << n << " nodes: the first read and 12 an hour";
    EXPECT_GE(least_per_node, 12);
    if (n <= kMaxOwnCycle) {
      EXPECT_EQ(burst, 1);
    } else {  // 1,000 nodes in a 300 s period: 3.3 a second on average
      EXPECT_LE(burst, 20) << "the first minute, when every node reads once";
      EXPECT_LE(steady_burst, 8) << "then about N/P a second";
    }
    std::printf("%lld nodes: %d-%d reads per node-hour, at most %d RPCs in one second (%d after the first minute)\n",
                static_cast<long long>(n), least_per_node, most_per_node, burst, steady_burst);
  }
}

TEST(QuerySchedule, NodeAndCountComeFromTheTaskEnvironment) {
  setenv("SLURM_NODEID", "2", 1);
  setenv("SLURM_JOB_NUM_NODES", "3", 1);
  query_slots s = slots_from_env("17");
  EXPECT_EQ(s.node, 2);
  EXPECT_EQ(s.nodes, 3);
  setenv("SLURM_NODEID", "x", 1);
  setenv("SLURM_JOB_NUM_NODES", "-4", 1);
  unsetenv("SLURM_NNODES");
  s = slots_from_env("17");
  EXPECT_EQ(s.node, 0) << "nonsense reads as one node of one";
  EXPECT_EQ(s.nodes, 1);
  unsetenv("SLURM_NODEID");
  unsetenv("SLURM_JOB_NUM_NODES");
}
