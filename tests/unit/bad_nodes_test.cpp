#include "bad_nodes.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "fixture.hpp"

using namespace trainctl;
using namespace std::chrono_literals;

TEST(BadNodes, RecordedLinesReadBackAndJunkIsSkipped) {
  trainctl_test::temp_dir t;
  const std::string path = t / "deep/dir/bad_nodes";
  bad_node b;
  b.when = 1000;
  b.host = "gpu-7";
  b.job = "42";
  b.gpus = "GPU-1,GPU-2";
  b.reason = "crashed (exit status 1)\nsecond line";
  EXPECT_EQ(record_bad_node(path, b), "");
  std::ofstream(path, std::ios::app) << "garbage line\n1 n9 job=1\n";
  const auto all = read_bad_nodes(path);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].host, "gpu-7");
  EXPECT_EQ(all[0].gpus, "GPU-1,GPU-2");
  EXPECT_EQ(all[0].reason, "crashed (exit status 1) second line");
  EXPECT_TRUE(read_bad_nodes(t / "absent").empty());
}

// A planted line naming n[1-3] would be one entry that excludes three nodes, and the
// cap, which counts entries, would let it.
TEST(BadNodes, OnlyOneValidNodeNamePerFinding) {
  trainctl_test::temp_dir t;
  const std::string path = t / "bad_nodes";
  bad_node b;
  b.when = 1000;
  b.job = "1";
  for (const char* host : {"n[1-3]", "n1,n2", "gpu 7", "", "n1\nn2"}) {
    b.host = host;
    EXPECT_NE(record_bad_node(path, b), "") << host;
  }
  std::ofstream(path, std::ios::app) << "1000 n[1-3] job=1 gpus=- reason=hung\n1000 n2 job=1 gpus=- reason=hung\n";
  const auto all = read_bad_nodes(path);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].host, "n2");
  EXPECT_TRUE(valid_node_name("gpu-a100.rack_3"));
  EXPECT_FALSE(valid_node_name(std::string(65, 'n')));
}

TEST(BadNodes, NewestFirstEachHostOnceWithinTheExpiryAndTheCap) {
  std::vector<bad_node> all(4);
  all[0].when = 100, all[0].host = "n1";
  all[1].when = 900, all[1].host = "n2";
  all[2].when = 950, all[2].host = "n3";
  all[3].when = 990, all[3].host = "n2";
  EXPECT_EQ(nodes_to_exclude(all, 1000, 600s, 10), (std::vector<std::string>{"n2", "n3"}));
  EXPECT_EQ(nodes_to_exclude(all, 1000, 600s, 1), (std::vector<std::string>{"n2"}));
  EXPECT_TRUE(nodes_to_exclude(all, 1000, 600s, 0).empty()) << "a cap of 0 never excludes";
  EXPECT_TRUE(nodes_to_exclude(all, 5000, 600s, 10).empty()) << "everything expired";
}
