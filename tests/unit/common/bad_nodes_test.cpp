#include "bad_nodes.hpp"
#include "node_names.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <set>

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

// A crash in a one-node job is a suspicion: it keeps nobody off a node, however many
// follow it. On an idle cluster every one-node job lands on the same node first, so two
// of a user's own programs that abort (an assert) pile up there without any contrast.
TEST(BadNodes, SuspicionsKeepNoNodeOffHoweverManyFollowIt) {
  auto suspect = [](std::int64_t when, const char* host, const char* job) {
    bad_node b;
    b.when = when;
    b.host = host;
    b.job = job;
    b.reason = std::string(kSuspectedCrash) + " (SIGABRT in a rank of a one-node job)";
    return b;
  };
  std::vector<bad_node> all = {suspect(900, "n1", "11"), suspect(910, "n1", "12"), suspect(920, "n1", "13")};
  EXPECT_TRUE(nodes_to_exclude(all, 1000, 600s, 10).empty()) << "3 programs' one-node aborts on n1: no contrast";
  EXPECT_EQ(suspected_nodes(all, 1000, 600s), (std::vector<std::string>{"n1"}));
  all.push_back(suspect(930, "n2", "14"));
  EXPECT_EQ(suspected_nodes(all, 1000, 600s), (std::vector<std::string>{"n2", "n1"})) << "newest first";
  // A finding that is no suspicion counts at once, beside them, and the host is then no
  // mere suspect.
  bad_node culprit;
  culprit.when = 940;
  culprit.host = "n1";
  culprit.job = "25";
  culprit.reason = "crashed (SIGSEGV, the first rank death of the job's 2 nodes, by 300 ms)";
  all.push_back(culprit);
  EXPECT_EQ(nodes_to_exclude(all, 1000, 600s, 10), (std::vector<std::string>{"n1"}));
  EXPECT_EQ(suspected_nodes(all, 1000, 600s), (std::vector<std::string>{"n2"}));
  EXPECT_TRUE(is_suspicion(all[0]));
  EXPECT_FALSE(is_suspicion(culprit));
}

// The memory stays bounded: an append that takes the file past its size rewrites it
// without the findings no reader uses (older than a week, or past the newest 300).
TEST(BadNodes, ALargeMemoryIsTrimmedOfExpiredFindingsAtTheNextAppend) {
  trainctl_test::temp_dir t;
  const std::string path = t / "bad_nodes";
  const std::int64_t now = 10'000'000;
  {
    std::ofstream out(path);
    for (int i = 0; i < 10000; ++i)
      out << now - 30 * 24 * 3600 + i << " old" << i % 50 << " job=1 gpus=- reason=crashed long ago\n";
    for (int i = 0; i < 5; ++i) out << now - 3600 + i << " recent" << i << " job=2 gpus=- reason=hang\n";
  }
  bad_node b;
  b.when = now;
  b.host = "newest";
  b.job = "3";
  b.reason = "straggler";
  ASSERT_EQ(record_bad_node(path, b), "");
  const auto all = read_bad_nodes(path);
  ASSERT_EQ(all.size(), 6u) << "the 10,000 month-old findings went, the recent ones stayed";
  EXPECT_EQ(all.front().host, "recent0");
  EXPECT_EQ(all.back().host, "newest");
  EXPECT_EQ(nodes_to_exclude(all, now, 24h, 100).size(), 6u);
}

TEST(BadNodes, TrimmingKeepsTheNewestFindingsWhenAllAreRecent) {
  trainctl_test::temp_dir t;
  const std::string path = t / "bad_nodes";
  const std::int64_t now = 10'000'000;
  {
    std::ofstream out(path);
    for (int i = 0; i < 3000; ++i)
      out << now - 3000 + i << " n" << i << " job=1 gpus=- reason=" << std::string(60, 'x') << "\n";
  }
  bad_node b;
  b.when = now;
  b.host = "last";
  b.job = "2";
  ASSERT_EQ(record_bad_node(path, b), "");
  const auto all = read_bad_nodes(path);
  ASSERT_EQ(all.size(), 300u);
  EXPECT_EQ(all.back().host, "last");
  EXPECT_EQ(all.front().host, "n2701");
}

// Nodes append while others trim: no finding is lost into a file that a trim replaced.
TEST(BadNodes, ConcurrentAppendsAndTrimsLoseNoFinding) {
  trainctl_test::temp_dir t;
  const std::string path = t / "bad_nodes";
  const std::int64_t now = 10'000'000;
  {
    std::ofstream out(path);  // just under the trim size, all expired
    for (int i = 0; i < 1400; ++i)
      out << now - 30 * 24 * 3600 << " old job=1 gpus=- reason=" << std::string(60, 'x') << "\n";
  }
  constexpr int kWriters = 4, kEach = 60;
  std::vector<pid_t> kids;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t p = fork();
    if (p == 0) {
      for (int i = 0; i < kEach; ++i) {
        bad_node b;
        b.when = now;
        b.host = "w" + std::to_string(w) + "-" + std::to_string(i);
        b.job = "9";
        b.reason = std::string(900, 'r');  // long lines: a trim every few appends
        if (!record_bad_node(path, b).empty()) _exit(1);
      }
      _exit(0);
    }
    kids.push_back(p);
  }
  for (pid_t p : kids) {
    int status = 0;
    waitpid(p, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::set<std::string> hosts;
  for (const auto& b : read_bad_nodes(path)) hosts.insert(b.host);
  EXPECT_EQ(hosts.count("old"), 0u);
  EXPECT_EQ(hosts.size(), static_cast<size_t>(kWriters * kEach)) << "every recent finding is there";
}

// `trainctl bad-nodes forget NODE`: a repaired node's findings go, the others stay, and
// the memory is neither followed through a symbolic link nor made when absent.
TEST(BadNodes, ForgettingANodeKeepsTheOthersAndFollowsNoLink) {
  trainctl_test::temp_dir t;
  const std::string path = t / "bad_nodes";
  for (const char* host : {"n1", "n2", "n1", "n3"}) {
    bad_node b;
    b.when = 1000;
    b.host = host;
    b.job = "7";
    b.reason = std::string("crashed on ") + host;
    ASSERT_EQ(record_bad_node(path, b), "");
  }
  std::size_t removed = 99;
  EXPECT_EQ(forget_bad_node(path, "n1", &removed), "");
  EXPECT_EQ(removed, 2u);
  const auto left = read_bad_nodes(path);
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].host, "n2");
  EXPECT_EQ(left[1].host, "n3");
  EXPECT_EQ(left[1].reason, "crashed on n3");
  EXPECT_EQ(forget_bad_node(path, "n9", &removed), "");
  EXPECT_EQ(removed, 0u);
  EXPECT_NE(forget_bad_node(path, "n[1-3]", &removed).find("is not one node's name"), std::string::npos);
  EXPECT_EQ(forget_bad_node(t / "absent", "n2", &removed), "") << "nothing to forget is not an error";
  EXPECT_FALSE(trainctl_test::exists(t / "absent"));
  ASSERT_EQ(symlink(path.c_str(), (t / "link").c_str()), 0);
  EXPECT_NE(forget_bad_node(t / "link", "n2", &removed), "") << "a link in place of the memory is refused";
  EXPECT_EQ(read_bad_nodes(path).size(), 2u);
}

// Rank 5 of array 77 died first on n3 (convicted); now it died first on n1: the crash
// follows the rank. Only that rank's convictions in that array on other hosts count:
// not another rank's, another array's, a suspicion, a finding without a rank, or n1's own.
TEST(BadNodes, ACrashThatFollowsTheRankFindsTheNodesItBlamedBefore) {
  const auto finding = [](const std::string& host, const std::string& reason) {
    bad_node b;
    b.host = host;
    b.reason = reason;
    return b;
  };
  const std::string lead = "the next node (n2) 310 ms later";
  EXPECT_EQ(crash_finding_reason("SIGSEGV", 5, "77", lead),
            "crashed (SIGSEGV in rank 5 of array 77, the first death of the job; the next node (n2) 310 ms later)");
  EXPECT_EQ(crash_finding_reason("SIGABRT", -1, "", "no other node's rank died"),
            "crashed (SIGABRT in a rank, the first death of the job; no other node's rank died)");
  EXPECT_TRUE(
      same_rank_died_first_elsewhere(finding("n3", crash_finding_reason("SIGSEGV", 5, "77", lead)), "n1", 5, "77"));
  EXPECT_TRUE(
      same_rank_died_first_elsewhere(finding("n3", crash_finding_reason("SIGABRT", 5, "77", lead)), "n1", 5, "77"))
      << "a rank's crash is the program's whatever the signal";
  for (const bad_node& other : {
           finding("n3", crash_finding_reason("SIGSEGV", 55, "77", lead)),
           finding("n3", crash_finding_reason("SIGSEGV", 5, "771", lead)),
           finding("n3", crash_finding_reason("SIGSEGV", 5, "", lead)),
           finding("n3", crash_finding_reason("SIGSEGV", -1, "77", lead)),
           finding("n1", crash_finding_reason("SIGSEGV", 5, "77", lead)),
           finding("n3", std::string(kSuspectedCrash) + " (SIGSEGV in rank 5 of array 77, a one-node job)"),
           finding("n3", "hung (rank 5 of array 77)"),
       })
    EXPECT_FALSE(same_rank_died_first_elsewhere(other, "n1", 5, "77")) << other.host << ": " << other.reason;
  EXPECT_FALSE(
      same_rank_died_first_elsewhere(finding("n3", crash_finding_reason("SIGSEGV", 5, "77", lead)), "n1", -1, "77"))
      << "a rank not known here matches nothing";
}

// The supervisor writes a straggler's reason, trainwatch slow-nodes reads it back: one
// pair, so the two cannot drift apart.
TEST(BadNodes, AStragglersReasonReadsBackAsWritten) {
  int rank = 0;
  double factor = 0;
  ASSERT_TRUE(parse_straggler_reason(straggler_reason(3, 2.5), &rank, &factor));
  EXPECT_EQ(rank, 3);
  EXPECT_DOUBLE_EQ(factor, 2.5);
  EXPECT_EQ(straggler_reason(3, 2.5), "slow (rank 3, x2.50 the fastest rank's step time)");
  EXPECT_FALSE(parse_straggler_reason("crashed (SIGSEGV in rank 5, the first death of the job; ...)", &rank, &factor));
  EXPECT_EQ(rank, -1);
  EXPECT_FALSE(parse_straggler_reason("slow (rank -2, x2.00 ...)", &rank, &factor)) << "no such rank";
  EXPECT_FALSE(parse_straggler_reason("slow (rank 1, x0 ...)", &rank, &factor)) << "no factor";
}
