// The job epilog's removal from --metrics-dir's directory (the names: task_metrics_test) of what a killed task left:
// the ended job's files and cut writes only, never what a link points at.
#include "metrics_files.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.hpp"

namespace trainctl {
namespace {

using trainctl_test::temp_dir;

void touch(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path;
  close(fd);
}

bool there(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

TEST(MetricsFiles, TheEpilogRemovesTheEndedJobsFilesAndNothingElse) {
  temp_dir d, outside;
  for (const char* name : {"trainctl_12_0_n1.prom", "trainctl_12_batch_n1.prom", ".trainctl_12_0_n1.prom.new.777",
                           "trainctl_123_0_n1.prom", "trainctl_1_0_n1.prom", "node_gpu.prom", "trainctl_12_0_n1.txt"})
    touch(d / name);
  touch(outside / "precious");
  ASSERT_EQ(symlink((outside / "precious").c_str(), (d / "trainctl_12_1_n1.prom").c_str()), 0);
  EXPECT_EQ(remove_job_metrics(d.path(), "12"), "");
  for (const char* gone : {"trainctl_12_0_n1.prom", "trainctl_12_batch_n1.prom", ".trainctl_12_0_n1.prom.new.777",
                           "trainctl_12_1_n1.prom"})
    EXPECT_FALSE(there(d / gone)) << gone;
  for (const char* kept : {"trainctl_123_0_n1.prom", "trainctl_1_0_n1.prom", "node_gpu.prom", "trainctl_12_0_n1.txt"})
    EXPECT_TRUE(there(d / kept)) << kept << ": another job's, or not a metrics file";
  EXPECT_TRUE(there(outside / "precious")) << "the link went, not what it pointed at";
}

TEST(MetricsFiles, ALinkAsTheDirectoryOrAJobThatIsNoIdIsRefused) {
  temp_dir d;
  touch(d / "trainctl_12_0_n1.prom");
  const std::string link = d.path() + ".link";
  ASSERT_EQ(symlink(d.path().c_str(), link.c_str()), 0);
  EXPECT_NE(remove_job_metrics(link, "12"), "");
  unlink(link.c_str());
  EXPECT_NE(remove_job_metrics(d.path(), "12*"), "");
  EXPECT_NE(remove_job_metrics(d.path(), ""), "");
  EXPECT_TRUE(there(d / "trainctl_12_0_n1.prom"));
}

}  // namespace
}  // namespace trainctl
