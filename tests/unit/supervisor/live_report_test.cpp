// --metrics-dir's goodput: the report's figures of one running task, from its run events
// file and SLURM's Start; the file read again only when it changed; an earlier run of a
// requeued job's lines left out; nothing before the Start is known.
#include "live_report.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>

#include "fixture.hpp"
#include "report_metrics.hpp"
#include "run_report.hpp"

namespace trainctl {
namespace {

using trainctl_test::temp_dir;

constexpr std::int64_t kStart = 1'700'000'000'000;

std::string line(std::int64_t at_s, const std::string& job, const std::string& rest) {
  return std::to_string(kStart + at_s * 1000) + " job=" + job + " " + rest + "\n";
}

void append(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
}

// name{cause} -> value, of the families' samples.
std::map<std::string, double> figures(const std::vector<metric_family>& families) {
  std::map<std::string, double> out;
  for (const metric_family& f : families)
    for (const metric_sample& s : f.samples) {
      std::string key = f.name;
      for (const auto& [k, v] : s.labels)
        if (k == "cause" || k == "kind") key += "{" + v + "}";
      out[key] = s.value;
    }
  return out;
}

task_record this_task() {
  task_record t;
  t.job_id = "700";
  t.name = "700";
  t.user = "alice";
  t.nodes = 2;
  return t;
}

const std::vector<std::pair<std::string, std::string>> kLabels{{"slurm_job", "700"}, {"node", "n1"}};

TEST(LiveReport, TheFiguresAreTheReportsOfTheRunningTaskAtThatMoment) {
  temp_dir d;
  const std::string path = d / "700";
  append(path, line(10, "700", "first_step step=0") + line(40, "700", "save step=30 reason=switch") +
                   line(45, "700", "saved step=30 ms=5000"));
  live_report live(this_task(), path);
  live.started(kStart);
  const auto at_60 = figures(live.metrics(kStart + 60'000, kLabels));
  task_record running = this_task();
  running.start_ms = kStart;
  running.state = "RUNNING";
  std::string why;
  const run_report r = build_run_report("700", {running}, read_run_events(path, &why), kStart + 60'000);
  ASSERT_EQ(why, "");
  EXPECT_DOUBLE_EQ(at_60.at("trainctl_goodput_ratio"), r.goodput());
  EXPECT_DOUBLE_EQ(at_60.at("trainctl_allocated_node_seconds_total"), 120.0) << "2 nodes, 60 s";
  EXPECT_DOUBLE_EQ(at_60.at("trainctl_productive_node_seconds_total"), r.productive);
  EXPECT_DOUBLE_EQ(at_60.at("trainctl_badput_node_seconds_total{startup}"), 20.0) << "10 s to the first step";
  EXPECT_DOUBLE_EQ(at_60.at("trainctl_unsaved_node_seconds"), r.unsaved);
  EXPECT_EQ(at_60.count("trainctl_interruptions_total"), 0u) << "the job's other tasks are not known here";
  EXPECT_EQ(at_60.count("trainctl_queue_seconds_total"), 0u);
  // Later, with no new line: the same kept training over more allocated time.
  const auto at_90 = figures(live.metrics(kStart + 90'000, kLabels));
  EXPECT_DOUBLE_EQ(at_90.at("trainctl_productive_node_seconds_total"),
                   at_60.at("trainctl_productive_node_seconds_total"));
  EXPECT_DOUBLE_EQ(at_90.at("trainctl_allocated_node_seconds_total"), 180.0);
  EXPECT_DOUBLE_EQ(at_90.at("trainctl_unsaved_node_seconds") - at_60.at("trainctl_unsaved_node_seconds"), 60.0);
}

TEST(LiveReport, AHangBothNodesFoundIsOneFinding) {
  temp_dir d;
  const std::string path = d / "700";
  append(path, line(10, "700", "first_step step=0") + line(50, "700", "notice reason=hang ms=12000") +
                   line(51, "700", "notice reason=hang ms=13000"));
  live_report live(this_task(), path);
  live.started(kStart);
  const auto f = figures(live.metrics(kStart + 60'000, kLabels));
  EXPECT_DOUBLE_EQ(f.at("trainctl_notices_total{hang}"), 1.0) << "each node's supervisor notes the one hang";
}

TEST(LiveReport, NothingBeforeTheStartOrTheFirstEvent) {
  temp_dir d;
  const std::string path = d / "700";
  live_report live(this_task(), path);
  EXPECT_TRUE(live.metrics(kStart + 5000, kLabels).empty()) << "no Start";
  live.started(kStart);
  EXPECT_TRUE(live.metrics(kStart + 5000, kLabels).empty()) << "no events file yet";
  EXPECT_EQ(live.take_problem(), "") << "a file rank 0 has not written yet is no problem";
  append(path, line(3, "700", "first_step step=0"));
  EXPECT_FALSE(live.metrics(kStart + 6000, kLabels).empty());
}

TEST(LiveReport, ANewLineIsReadAndAnEarlierRunsAreNot) {
  temp_dir d;
  const std::string path = d / "700";
  // The job's first run (requeued), then this one, started at kStart.
  append(path, line(-300, "700", "first_step step=0") + line(-200, "700", "save step=50 reason=deadline") +
                   line(-195, "700", "saved step=50 ms=5000") + line(10, "700", "first_step step=50") +
                   line(5, "701", "first_step step=0"));
  live_report live(this_task(), path);
  live.started(kStart);
  const auto before = figures(live.metrics(kStart + 60'000, kLabels));
  EXPECT_DOUBLE_EQ(before.at("trainctl_allocated_node_seconds_total"), 120.0) << "this run only";
  EXPECT_DOUBLE_EQ(before.at("trainctl_productive_node_seconds_total"), 0.0)
      << "the earlier run's save is not this run's";
  append(path, line(61, "700", "save step=80 reason=switch") + line(63, "700", "saved step=80 ms=2000"));
  const auto after = figures(live.metrics(kStart + 70'000, kLabels));
  EXPECT_GT(after.at("trainctl_productive_node_seconds_total"), 0.0) << "the new save was read";
  EXPECT_DOUBLE_EQ(after.at("trainctl_saves_total"), 1.0);
}

TEST(LiveReport, AFileThatIsNotTheUsersOwnIsRefusedInOneLineOnce) {
  temp_dir d;
  const std::string real = d / "real", path = d / "700";
  append(real, line(10, "700", "first_step step=0"));
  ASSERT_EQ(symlink(real.c_str(), path.c_str()), 0);
  live_report live(this_task(), path);
  live.started(kStart);
  EXPECT_TRUE(live.metrics(kStart + 60'000, kLabels).empty());
  const std::string problem = live.take_problem();
  EXPECT_NE(problem, "");
  EXPECT_EQ(problem.find('\n'), std::string::npos) << problem;
  live.metrics(kStart + 75'000, kLabels);
  EXPECT_EQ(live.take_problem(), "") << "said once";
}

}  // namespace
}  // namespace trainctl
