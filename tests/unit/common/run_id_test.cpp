#include "run_id.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <map>

#include "fixture.hpp"
#include "run_events.hpp"

using namespace trainctl;

namespace {
std::string id_in(const std::map<std::string, std::string>& vars) {
  return run_id([&](const char* name) {
    const auto it = vars.find(name);
    return it == vars.end() ? std::string() : it->second;
  });
}
}  // namespace

// Every task of an array and every requeue (same job id) get one id; the cluster tells
// two clusters' job 4242 apart.
TEST(RunId, TheArrayOrTheJobOnItsCluster) {
  EXPECT_EQ(id_in({{"SLURM_CLUSTER_NAME", "alps"}, {"SLURM_ARRAY_JOB_ID", "4242"}, {"SLURM_JOB_ID", "4250"}}),
            "alps-4242");
  EXPECT_EQ(id_in({{"SLURM_CLUSTER_NAME", "alps"}, {"SLURM_JOB_ID", "4250"}}), "alps-4250");
  EXPECT_EQ(id_in({{"SLURM_JOB_ID", "4250"}}), "4250");
  EXPECT_EQ(id_in({{"SLURM_CLUSTER_NAME", "a b/c"}, {"SLURM_JOB_ID", "4250"}}), "4250")
      << "a cluster name that cannot be part of an id is left out";
  EXPECT_EQ(id_in({}), "") << "outside a SLURM job";
  EXPECT_EQ(id_in({{"SLURM_JOB_ID", "42; rm"}}), "");
}

// A job submitted again goes on as the run it is given.
TEST(RunId, TheUsersOwnWhenItIsOne) {
  EXPECT_EQ(id_in({{"TRAINCTL_RUN_ID", "llama-7b.run-3"}, {"SLURM_JOB_ID", "4250"}}), "llama-7b.run-3");
  EXPECT_EQ(id_in({{"TRAINCTL_RUN_ID", "has space"}, {"SLURM_JOB_ID", "4250"}}), "4250");
  EXPECT_EQ(id_in({{"TRAINCTL_RUN_ID", std::string(65, 'a')}, {"SLURM_JOB_ID", "4250"}}), "4250");
  EXPECT_TRUE(valid_run_id(std::string(64, 'a')));
  EXPECT_FALSE(valid_run_id(""));
  EXPECT_FALSE(valid_run_id("a/b"));
}

// The array's submit time makes the id of an array whose job id the controller gave
// before (its state reset) another one; it is UTC, so every node writes the same.
TEST(RunId, TheArraysSubmitTimeTellsTwoArraysOfOneIdApart) {
  const auto with = [](std::int64_t since) {
    return run_id(
        [](const char* name) {
          return std::string(name) == "SLURM_CLUSTER_NAME" ? "alps" : std::string(name) == "SLURM_JOB_ID" ? "4250" : "";
        },
        since);
  };
  EXPECT_EQ(with(1796225154000), "alps-4250-20261202T152554");
  EXPECT_EQ(with(0), "alps-4250") << "unknown: the id without it";
  setenv("TZ", "Asia/Kolkata", 1);
  tzset();
  EXPECT_EQ(with(1796225154000), "alps-4250-20261202T152554") << "the node's time zone does not change it";
  unsetenv("TZ");
  tzset();
}

namespace {
run_event start_line(std::int64_t restart, std::int64_t since) {
  run_event e;
  e.what = "task_start";
  e.job = "4250";
  e.restart = restart;
  e.figures = {{"since", since}};
  return e;
}
}  // namespace

// A requeued task's SubmitTime is its requeue's: it takes what its array's first runs
// wrote, never a later array's and never an earlier one of the same id.
TEST(RunId, ARequeuedTaskTakesItsArraysFirstSubmitTime) {
  const std::int64_t old_array = 1700000000000, this_array = 1796225154000, requeued = 1796226000000;
  EXPECT_EQ(array_since(this_array, 0, {}), this_array) << "a first run: its own SubmitTime";
  EXPECT_EQ(array_since(requeued, 1, {start_line(0, old_array), start_line(0, this_array), start_line(1, this_array)}),
            this_array);
  EXPECT_EQ(array_since(requeued, 2, {start_line(0, this_array), start_line(0, old_array)}), this_array)
      << "the newest, whatever the file's order";
  EXPECT_EQ(array_since(requeued, 1, {start_line(0, requeued + 1000)}), 0) << "submitted after it: another array";
  EXPECT_EQ(array_since(requeued, 1, {}), 0) << "its first run wrote none (an older trainctl): the id without it";
  EXPECT_EQ(array_since(0, 0, {start_line(0, this_array)}), 0) << "the controller did not answer";
}

// The lines of an earlier array of the same id are not this one's: older than its
// submit (a minute allowed for the nodes' clocks) they are left out.
TEST(RunEvents, OnlyTheNewestArrayOfAnId) {
  run_event old_end;
  old_end.what = "task_end";
  old_end.reason = "no-progress";
  old_end.ms = 1700000100000;
  run_event skewed = old_end;
  skewed.reason = "ok";
  skewed.ms = 1796225154000 - 30000;
  run_event start = start_line(0, 1796225154000);
  start.ms = 1796225156000;
  const auto kept = this_array({old_end, start_line(0, 1700000000000), start, skewed});
  ASSERT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept[0].what, "task_start");
  EXPECT_EQ(kept[1].reason, "ok") << "30 s before the submit: a node's clock, kept";
  EXPECT_EQ(this_array({old_end}).size(), 1u) << "no task_start (an older trainctl): every line";
}

// Two nodes' supervisors append to one array's run events at once, the file at its size
// limit (8 MiB) so that their appends trim it meanwhile: every event of both is there,
// whole and in its writer's order (one write per append, under the file's lock).
TEST(RunEvents, TwoNodesAppendingAtOnceAtTheLimitLoseAndInterleaveNothing) {
  trainctl_test::temp_dir t;
  const std::string path = t / "runs/4242";
  std::size_t filled = 0;
  {
    const std::string old = "1700000000000 job=1 saved ms=5 text=" + std::string(100, 'o') + "\n";
    std::string lines;
    while (lines.size() + old.size() < (8u << 20) - 2000) lines += old, ++filled;
    t.write("runs/4242", lines);
  }
  constexpr int kEach = 1500;
  pid_t kids[2];
  for (int w = 0; w < 2; ++w) {
    kids[w] = trainctl_test::fork_child();
    if (kids[w] == 0) {
      for (int i = 0; i < kEach; ++i) {
        run_event e;
        e.ms = 1796225154000 + i;
        e.job = "4242";
        e.what = "saved";
        e.took_ms = i;
        e.node = w == 0 ? "n1" : "n2";
        e.text = std::string(80, w == 0 ? 'a' : 'b');  // lines of about 150 bytes
        if (!append_run_events(path, format_run_event(e)).empty()) _exit(1);
      }
      _exit(0);
    }
  }
  for (pid_t p : kids) {
    int status = 0;
    ASSERT_EQ(waitpid(p, &status, 0), p);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "an append failed";
  }
  std::string why;
  std::map<std::string, std::vector<std::int64_t>> by_node;
  std::size_t old = 0;
  for (const run_event& e : read_run_events(path, &why)) {
    if (e.job == "1") ++old;
    if (e.job != "4242") continue;
    EXPECT_EQ(e.text, std::string(80, e.node == "n1" ? 'a' : 'b')) << "a line mixed with another";
    by_node[e.node].push_back(e.took_ms);
  }
  EXPECT_EQ(why, "");
  for (const char* node : {"n1", "n2"}) {
    const auto& got = by_node[node];
    ASSERT_EQ(got.size(), static_cast<std::size_t>(kEach)) << node << ": events lost";
    for (int i = 0; i < kEach; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], i) << node << " out of order";
  }
  EXPECT_LT(old, filled) << "the file was trimmed meanwhile";
  struct stat st {};
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_LE(static_cast<std::size_t>(st.st_size), 8u << 20) << "within its limit";
}
