// Files many processes append to, kept under a size: the oldest whole lines go, the
// newest stay, and an appender that opened the file before a trim still writes to it.
#include "bounded_append.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "private_files.hpp"

namespace trainctl {
namespace {

class BoundedAppendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/trainctl-bounded-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/12345";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string read() const {
    std::ifstream in(path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  std::string dir_, path_;
};

TEST_F(BoundedAppendTest, PastTheLimitTheOldestWholeLinesGoAndTheNewestStay) {
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(append_private(path_, "line " + std::to_string(i) + "\n", 4096), "");
  const std::string text = read();
  EXPECT_LE(text.size(), 4096u);
  EXPECT_EQ(text.rfind("line 999\n"), text.size() - 9);  // the newest is last
  EXPECT_EQ(text.substr(0, 5), "line ");                 // a whole line first
  std::istringstream lines(text);
  int previous = -1, count = 0;
  for (std::string line; std::getline(lines, line); ++count) {
    const int n = std::atoi(line.substr(5).c_str());
    if (previous >= 0) {
      EXPECT_EQ(n, previous + 1) << "lines lost or torn at " << line;
    }
    previous = n;
  }
  EXPECT_GT(count, 150);  // at least half the limit kept
}

TEST_F(BoundedAppendTest, AnAppenderThatOpenedTheFileBeforeATrimStillWritesToIt) {
  ASSERT_EQ(append_private(path_, std::string(3000, 'a') + "\n", 0), "");
  const int early = open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
  ASSERT_GE(early, 0);
  ASSERT_EQ(append_private(path_, std::string(3000, 'b') + "\n", 4096), "");  // trims
  ASSERT_EQ(append_bounded(early, path_, "late\n", 4096), "");
  close(early);
  const std::string text = read();
  EXPECT_EQ(text, std::string(3000, 'b') + "\nlate\n");
}

TEST_F(BoundedAppendTest, ALockHeldByAnotherStillTakesTheLineAtOnceAndLeavesTheTrim) {
  ASSERT_EQ(append_private(path_, std::string(5000, 'a') + "\n", 0), "");
  const int other = open(path_.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);  // another reader of the file
  ASSERT_GE(other, 0);
  ASSERT_EQ(flock(other, LOCK_EX), 0);
  const int fd = open(path_.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
  ASSERT_GE(fd, 0);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(append_bounded(fd, path_, "new\n", 4096, 0), "");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(500));
  close(fd);
  close(other);
  EXPECT_EQ(read(), std::string(5000, 'a') + "\nnew\n");  // not trimmed, nothing lost
}

TEST_F(BoundedAppendTest, TheSweepRemovesOnlyOldRunFiles) {
  ASSERT_EQ(append_private(dir_ + "/111", "x\n"), "");
  ASSERT_EQ(append_private(dir_ + "/222", "x\n"), "");
  ASSERT_EQ(append_private(dir_ + "/notes", "x\n"), "");
  const std::time_t old = std::time(nullptr) - 100 * 24 * 3600;
  for (const char* name : {"/111", "/notes"}) {
    const timespec times[2] = {{old, 0}, {old, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, (dir_ + name).c_str(), times, 0), 0);
  }
  EXPECT_EQ(sweep_old_files(dir_, 90L * 24 * 3600), 1);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/111"));
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/222"));    // written lately
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/notes"));  // not one array's events
  EXPECT_EQ(sweep_old_files(dir_ + "/none", 1), 0);
}

}  // namespace
}  // namespace trainctl
