// --metrics-dir: which directories may take a user's file, what the file says of a node
// state, and the file's life (written by rename, at most once per interval, removed at
// the end, and only if it is still the one this process wrote).
#include "task_metrics.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.hpp"

namespace trainctl {
namespace {

using std::chrono::milliseconds;
using trainctl_test::temp_dir;

struct stat dir_stat(uid_t owner, mode_t mode) {
  struct stat st {};
  st.st_mode = S_IFDIR | mode;
  st.st_uid = owner;
  return st;
}

TEST(TaskMetrics, OnlyADirectoryNoOtherUserCanReplaceAFileInIsTaken) {
  const uid_t me = 1000;
  EXPECT_EQ(metrics_dir_problem(dir_stat(0, 0755), me), "") << "root's, as node_exporter's package makes it";
  EXPECT_EQ(metrics_dir_problem(dir_stat(me, 0700), me), "");
  EXPECT_EQ(metrics_dir_problem(dir_stat(0, 01775), me), "") << "a group with the sticky bit";
  EXPECT_NE(metrics_dir_problem(dir_stat(0, 0775), me), "") << "a group without it could replace the file";
  EXPECT_NE(metrics_dir_problem(dir_stat(0, 01777), me), "") << "everyone, even with the sticky bit";
  EXPECT_NE(metrics_dir_problem(dir_stat(1001, 0755), me), "") << "another user's";
  struct stat link = dir_stat(me, 0777);
  link.st_mode = S_IFLNK | 0777;
  EXPECT_NE(metrics_dir_problem(link, me), "");
}

TEST(TaskMetrics, TheFileNameHoldsNothingButSafeCharacters) {
  metrics_identity id;
  id.job = "4242";
  id.step = "batch";
  id.node = "gpu/../n1";
  EXPECT_EQ(id.file_name(), "trainctl_4242_batch_gpu-..-n1.prom");
}

struct metrics_test : ::testing::Test {
  node_state ns{};
  metrics_identity id;
  metrics_test() {
    init_header(ns);
    id.job = "7";
    id.array_task = "3";
    id.user = "alice";
    id.run_id = "c-7-20261202T120000";
    id.node = "n1";
  }
  // A task_metrics over private directory `t` (mode 0700), with rank 0 at step 1.
  std::unique_ptr<task_metrics> open_in(const temp_dir& t, milliseconds every) {
    chmod(t.path().c_str(), 0700);
    beat(0, 0, 1, 1796000000000, -1);
    std::string why;
    auto m = task_metrics::open(t.path(), every, id, &why);
    EXPECT_TRUE(m) << why;
    return m;
  }
  void beat(int slot, int rank, std::int64_t step, std::int64_t beat_ms, std::int64_t committed) {
    rank_beat& b = ns.beats[slot];
    b.pid.store(100 + slot);
    b.rank.store(rank);
    b.step.store(step);
    b.beat_ms.store(beat_ms);
    b.step_us.store(250000);
    b.saves.committed_step1.store(committed + 1);
    b.saves.committed_ms.store(committed >= 0 ? 1796000000000 + committed : 0);
  }
};

TEST_F(metrics_test, NothingBeforeTheFirstCheck) { EXPECT_EQ(task_metrics_text(ns, id), ""); }

TEST_F(metrics_test, EachRanksFiguresAndTheStepEveryRankCommitted) {
  beat(0, 0, 120, 1796000100000, 100);
  beat(1, 1, 118, 1796000099000, 80);
  beat(2, 1, 5, 1796000000000, -1);  // rank 1's earlier process, restarted: its old slot
  ns.deadline_ms.store(1796003600000);
  const std::string text = task_metrics_text(ns, id);
  const std::string labels =
      R"(slurm_job="7",array_task="3",slurm_step="0",user="alice",run_id="c-7-20261202T120000",node="n1")";
  EXPECT_NE(text.find("trainctl_ranks{" + labels + "} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("trainctl_rank_step{" + labels + ",rank=\"1\"} 118\n"), std::string::npos) << text;
  EXPECT_NE(text.find("trainctl_rank_step_seconds{" + labels + ",rank=\"0\"} 0.25\n"), std::string::npos) << text;
  EXPECT_NE(text.find("trainctl_last_committed_step{" + labels + "} 80\n"), std::string::npos)
      << "the step every rank committed: the lowest\n"
      << text;
  EXPECT_NE(text.find("trainctl_deadline_timestamp_seconds{" + labels + "} 1796003600\n"), std::string::npos);
  EXPECT_EQ(text.find("trainctl_job_end_timestamp_seconds"), std::string::npos) << "not known: left out";
  EXPECT_NE(text.find("# TYPE trainctl_rank_straggler_findings_total counter\n"), std::string::npos);
}

TEST_F(metrics_test, NoCommittedStepUntilEveryRankCommittedOne) {
  beat(0, 0, 120, 1796000100000, 100);
  beat(1, 1, 118, 1796000099000, -1);
  EXPECT_EQ(task_metrics_text(ns, id).find("trainctl_last_committed_step"), std::string::npos);
}

TEST_F(metrics_test, WrittenByRenameOncePerIntervalAndRemovedAtTheEnd) {
  temp_dir t;
  auto m = open_in(t, milliseconds(15000));
  ASSERT_TRUE(m);
  const std::string file = t.path() + "/" + id.file_name();
  EXPECT_EQ(m->update(ns, 1000), "");
  auto read = [&] {
    std::string text;
    const int fd = ::open(file.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    char buf[4096];
    for (ssize_t n; fd >= 0 && (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
    if (fd >= 0) close(fd);
    return text;
  };
  EXPECT_NE(read().find("} 1\n"), std::string::npos);
  struct stat st {};
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u) << "node_exporter's user reads it";
  ns.beats[0].step.store(2);
  m->update(ns, 5000);
  EXPECT_EQ(read().find("trainctl_rank_step{slurm_job=\"7\",array_task=\"3\",slurm_step=\"0\",user=\"alice\",run_id="
                        "\"c-7-20261202T120000\","
                        "node=\"n1\",rank=\"0\"} 2"),
            std::string::npos)
      << "rewritten before its interval";
  m->update(ns, 16000);
  EXPECT_NE(read().find(",rank=\"0\"} 2\n"), std::string::npos);
  m.reset();
  EXPECT_NE(stat(file.c_str(), &st), 0) << "the file goes with the task";
}

TEST_F(metrics_test, TheEndRemovesOnlyTheFileThisProcessWroteLast) {
  temp_dir t;
  auto m = open_in(t, milliseconds(1000));
  ASSERT_TRUE(m);
  m->update(ns, 1000);
  const std::string file = t.path() + "/" + id.file_name();
  // The node's next publisher (another task's supervisor) replaced it.
  {
    const int fd = ::open((file + ".other").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "trainctl_ranks 1\n", 17), 17);
    close(fd);
  }
  ASSERT_EQ(rename((file + ".other").c_str(), file.c_str()), 0);
  m.reset();
  struct stat st {};
  EXPECT_EQ(stat(file.c_str(), &st), 0);
}

TEST(TaskMetrics, ARefusedDirectoryIsOneLine) {
  temp_dir t;
  chmod(t.path().c_str(), 01777);
  std::string why;
  EXPECT_FALSE(task_metrics::open(t.path(), milliseconds(1000), metrics_identity{}, &why));
  EXPECT_NE(why.find("can be written by every user"), std::string::npos) << why;
  EXPECT_EQ(why.find('\n'), std::string::npos);
  EXPECT_FALSE(task_metrics::open(t.path() + "/absent", milliseconds(1000), metrics_identity{}, &why));
  EXPECT_NE(why.find("No such file"), std::string::npos) << why;
}

}  // namespace
}  // namespace trainctl
