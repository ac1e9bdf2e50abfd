#include "job_status.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <string>

#include "node_state.hpp"
#include "node_state_file.hpp"

using namespace trainctl;

namespace {

// What two nodes' probes print for a job of 4 ranks where rank 2 is slow (the srun
// task's own lines come back merged with them).
const char* kTwoNodes =
    "node host=n1 now_ms=1000000 flags=0 deadline_ms=1600000 supervised=1 published_ms=999900\n"
    "rank host=n1 rank=1 pid=11 step=250 beat_ms=999700 step_us=53000 slow=0 agreements=5 mem_free=1024 "
    "mem_limit=4096\n"
    "rank host=n1 rank=0 pid=10 step=250 beat_ms=999700 step_us=52000 slow=0 agreements=5 mem_free=1024 "
    "mem_limit=4096\n"
    "switch host=n1 kind=exit name=kill-switch present=0 touches=0 path=/home/a b/KILL\n"
    "switch host=n1 kind=save name=save-switch present=0 touches=1 path=/home/a b/SAVE\n"
    "node host=n2 now_ms=1000500 flags=0 deadline_ms=1600000 supervised=1 published_ms=1000400 "
    "longest_save_ms=20500\n"
    "rank host=n2 rank=2 pid=20 step=240 beat_ms=999000 step_us=156000 slow=7 agreements=5 mem_free=0 mem_limit=0\n"
    "rank host=n2 rank=3 pid=21 step=240 beat_ms=0 step_us=0 slow=0 agreements=5 mem_free=0 mem_limit=0\n"
    "switch host=n2 kind=exit name=kill-switch present=1 touches=0 path=/home/a b/KILL\n"
    "switch host=n2 kind=save name=save-switch present=0 touches=2 path=/home/a b/SAVE\n"
    "srun: Job step creation temporarily disabled, retrying\n";

status_job facts() {
  status_job j;
  j.id = "42";
  j.name = "train";
  j.state = "RUNNING";
  j.node_list = "n[1-2]";
  j.end_ms = 1720000;
  j.now_ms = 1000000;
  return j;
}

}  // namespace

TEST(JobStatus, RanksAreSortedWithAgesFromTheirOwnNodesClock) {
  const job_status s = parse_status_lines(kTwoNodes, facts());
  ASSERT_EQ(s.ranks.size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(s.ranks[r].rank, r);
  EXPECT_EQ(s.ranks[0].node, "n1");
  EXPECT_EQ(s.ranks[2].node, "n2");
  EXPECT_EQ(s.ranks[0].since_check_ms, 300);
  EXPECT_EQ(s.ranks[2].since_check_ms, 1500);  // n2's clock, not n1's
  EXPECT_EQ(s.ranks[3].since_check_ms, -1) << "no check() yet";
  EXPECT_EQ(s.other.size(), 1u) << "srun's own line is kept apart";
}

TEST(JobStatus, FactorsAgainstTheFastestRankAndOnlyAStragglerAsAFinding) {
  const job_status s = parse_status_lines(kTwoNodes, facts());
  EXPECT_DOUBLE_EQ(s.ranks[0].factor, 1.0);
  EXPECT_NEAR(s.ranks[2].factor, 3.0, 1e-9);
  EXPECT_EQ(s.ranks[3].factor, 0) << "unknown work per step has no factor";
  const auto findings = status_findings(s);
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].find("rank 2 on n2 is a straggler: x3.00"), std::string::npos) << findings[0];
  // Slow, but for fewer agreements in a row than its setting: no finding (evidence or nothing).
  std::string text = kTwoNodes;
  text.replace(text.find("slow=7"), 6, "slow=4");
  EXPECT_TRUE(status_findings(parse_status_lines(text, facts())).empty());
}

TEST(JobStatus, OneRowPerSwitchWhateverNodeSawIt) {
  const job_status s = parse_status_lines(kTwoNodes, facts());
  ASSERT_EQ(s.switches.size(), 2u);
  EXPECT_EQ(s.switches[0].path, "/home/a b/KILL");
  EXPECT_TRUE(s.switches[0].present) << "n2 sees the kill switch";
  EXPECT_EQ(s.switches[1].touches, 2);
  const std::string table = format_status_table(s);
  EXPECT_NE(table.find("kill-switch /home/a b/KILL: THERE"), std::string::npos) << table;
  EXPECT_NE(table.find("save-switch /home/a b/SAVE: touched 2 times"), std::string::npos) << table;
  EXPECT_NE(table.find("saves       the longest took 20.5 s"), std::string::npos) << table;
}

TEST(JobStatus, TheDeadlineIsEndTimeMinusTheGracefulExit) {
  const job_status s = parse_status_lines(kTwoNodes, facts());
  const std::string table = format_status_table(s);
  EXPECT_NE(table.find("deadline    in 10m00s (EndTime minus the graceful exit, 2m00s)"), std::string::npos) << table;
  std::string none = kTwoNodes;
  for (size_t at; (at = none.find("deadline_ms=1600000")) != std::string::npos;) none.replace(at, 19, "deadline_ms=0");
  EXPECT_NE(format_status_table(parse_status_lines(none, facts())).find("deadline    none published"),
            std::string::npos);
}

TEST(JobStatus, JsonCarriesTheSameView) {
  const auto j = nlohmann::json::parse(format_status_json(parse_status_lines(kTwoNodes, facts())));
  EXPECT_EQ(j["job"]["id"], "42");
  ASSERT_EQ(j["ranks"].size(), 4u);
  EXPECT_EQ(j["ranks"][2]["straggler"], true);
  EXPECT_EQ(j["ranks"][3]["step_ms"], nullptr);
  EXPECT_EQ(j["deadline"]["graceful_exit_s"], 120);
  EXPECT_DOUBLE_EQ(j["deadline"]["in_s"].get<double>(), 600.0);
  EXPECT_EQ(j["findings"].size(), 1u);
  EXPECT_DOUBLE_EQ(j["longest_save_s"].get<double>(), 20.5);
  const std::string lines = format_status_json(parse_status_lines(kTwoNodes, facts()), true);
  EXPECT_EQ(lines.find('\n'), lines.size() - 1) << "--watch --json: one document per line";
}

TEST(JobStatus, EveryNoticeInTheNodeStateIsNamed) {
  std::string text = kTwoNodes;
  text.replace(text.find("flags=0"), 7, "flags=" + std::to_string(kFlagSignal | kFlagPreempted));
  const job_status s = parse_status_lines(text, facts());
  const std::string table = format_status_table(s);
  EXPECT_NE(table.find("notices     preempted, a notice signal (scancel --signal, --signal=SIG@TIME)"),
            std::string::npos)
      << table;
  const auto j = nlohmann::json::parse(format_status_json(s));
  EXPECT_EQ(j["notices"].size(), 2u);
}

TEST(JobStatus, LinesFromNoValidNodeNameAreDroppedNotShown) {
  const std::string text =
      "node host=n1 now_ms=1000 flags=0 deadline_ms=0 supervised=1 published_ms=900\n"
      "rank host=$(reboot) rank=0 pid=1 step=1 beat_ms=900 step_us=1 slow=0 agreements=5 mem_free=0 mem_limit=0\n"
      "error host=n1 node state /run/x has another format (another trainctl version?)\n";
  const job_status s = parse_status_lines(text, facts());
  EXPECT_TRUE(s.ranks.empty());
  ASSERT_EQ(s.errors.size(), 2u);
  EXPECT_EQ(s.errors[0], "a line from no valid node name was dropped");
  EXPECT_EQ(s.errors[1], "n1: node state /run/x has another format (another trainctl version?)");
  EXPECT_EQ(format_status_table(s).find("reboot"), std::string::npos);
}

TEST(JobStatus, ANodeStateIsReadWithoutCreatingOrLockingIt) {
  char tmpl[] = "/tmp/job_status_test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl, path = dir + "/state";
  std::string why;
  EXPECT_EQ(read_node_state(path, &why), nullptr);
  EXPECT_NE(why.find("No such file"), std::string::npos) << why;
  struct stat st {};
  EXPECT_NE(stat(path.c_str(), &st), 0) << "reading created the file";
  {
    node_state_file f(path);
    f.get().deadline_ms.store(1234);
    auto copy = read_node_state(path, &why);
    ASSERT_NE(copy, nullptr) << why;
    EXPECT_EQ(copy->deadline_ms.load(), 1234);
    f.unlink_if_last();  // the reader held no lock: the last user still removes it
  }
  EXPECT_NE(stat(path.c_str(), &st), 0) << "the state was not removed by its last user";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  EXPECT_EQ(read_node_state(path, &why), nullptr) << "a FIFO is refused without blocking";
  unlink(path.c_str());
  rmdir(dir.c_str());
}

// The job's name and the nodes' text reach a terminal: no escape sequence gets through.
TEST(JobStatus, ControlCharactersInTheTableAreShownEscaped) {
  status_job j = facts();
  j.name = "train\033]0;owned\007\033[2J";
  const std::string table = format_status_table(parse_status_lines(kTwoNodes, j));
  EXPECT_EQ(table.find('\033'), std::string::npos) << table;
  EXPECT_EQ(table.find('\007'), std::string::npos) << table;
  EXPECT_NE(table.find("train\\x1b]0;owned\\x07\\x1b[2J"), std::string::npos) << table;
  EXPECT_NE(table.find('\n'), std::string::npos) << "line ends stay";
}

// A rank that died of an error its loop noted, while the job runs on (its launcher
// restarts the workers): named with its error, as one finding.
TEST(JobStatus, ARankThatDiedOfANotedErrorIsAFindingWithTheError) {
  const std::string text = std::string(kTwoNodes) +
                           "died host=n2 rank=3 pid=22 error=RuntimeError: CUDA error: an illegal memory access "
                           "(train.py:212 in step)\n";
  const job_status s = parse_status_lines(text, facts());
  ASSERT_EQ(s.deaths.size(), 1u);
  EXPECT_EQ(s.other.size(), 1u) << "only srun's own line is other";
  const auto findings = status_findings(s);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(
      findings[1],
      "rank 3 on n2 (pid 22) died of `RuntimeError: CUDA error: an illegal memory access (train.py:212 in step)`");
}
