#include "step_presence.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace trainctl;

TEST(StepPresence, TheClockLineReadsBack) {
  const clock_facts c{"eda8e810-e446", true, 12345};
  const clock_facts back = parse_clock_line(clock_line(c));
  EXPECT_EQ(back.boot, c.boot);
  EXPECT_TRUE(back.synced);
  EXPECT_EQ(back.max_error_us, 12345);
  EXPECT_EQ(parse_clock_line("nonsense").max_error_us, -1);
  EXPECT_FALSE(this_clock().boot.empty()) << "Linux has a boot id";
}

TEST(StepPresence, ASignOfLifeIsWrittenTouchedAndReadOnlyAsThisUsersFile) {
  char tmpl[] = "/tmp/presence-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(renew_presence(fd, "n1", {"b00t", false, 16000000}), "");
  const std::int64_t first = modified_ms(fd, "n1.alive");
  EXPECT_GT(first, 0);
  usleep(20000);
  EXPECT_EQ(renew_presence(fd, "n1", {"other", true, 1}), "");
  EXPECT_GT(modified_ms(fd, "n1.alive"), first) << "touched";
  ASSERT_EQ(symlink("/etc/passwd", (dir + "/n2.alive").c_str()), 0);
  ASSERT_EQ(mkfifo((dir + "/n3.alive").c_str(), 0600), 0);
  const std::vector<node_presence> all = read_presences(fd);
  ASSERT_EQ(all.size(), 1U) << "a link and a FIFO are no sign of life";
  EXPECT_EQ(all[0].node, "n1");
  EXPECT_EQ(all[0].clock.boot, "b00t") << "the clock as written at the start";
  EXPECT_NE(renew_presence(fd, "n3", {}), "") << "a FIFO is refused, without blocking";
  close(fd);
  EXPECT_EQ(std::system(("rm -rf " + dir).c_str()), 0);
}
