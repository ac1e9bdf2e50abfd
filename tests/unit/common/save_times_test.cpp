#include "save_times.hpp"

#include <algorithm>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.hpp"

using namespace trainctl;
using namespace std::chrono_literals;

TEST(SaveTimes, TheLongestRecordedSaveIsReadBack) {
  trainctl_test::temp_dir t;
  const std::string path = t / "deep/save_times/1234";
  std::string why;
  EXPECT_EQ(longest_recorded_save_ms(path, &why), 0) << "no file yet: none seen";
  EXPECT_EQ(why, "");
  EXPECT_EQ(record_save_time(path, "1235", "n1", 20400), "");
  EXPECT_EQ(record_save_time(path, "1236", "n2", 31000), "");
  EXPECT_EQ(record_save_time(path, "1236", "$(bad node)", 25000), "") << "the node is only recorded, as '-'";
  trainctl_test::append(path, "junk save_ms=-5\nmore junk save_ms=999999999999\n");
  EXPECT_EQ(longest_recorded_save_ms(path, &why), 31000);
  EXPECT_EQ(trainctl_test::read_file(path).find("$(bad"), std::string::npos);
  struct stat st {};
  ASSERT_EQ(stat((t / "deep/save_times").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

// A file past the read window (1 MiB): the newest lines, where the longest save is, are
// the ones read.
TEST(SaveTimes, ALongFileIsReadFromItsNewestEnd) {
  trainctl_test::temp_dir t;
  const std::string path = t / "save_times/77";
  ASSERT_EQ(record_save_time(path, "77", "n1", 1000), "");
  std::string old_lines;
  while (old_lines.size() < (std::size_t{3} << 20)) old_lines += "1700000000 job=77 node=n1 save_ms=1000\n";
  trainctl_test::append(path, old_lines);
  ASSERT_EQ(record_save_time(path, "78", "n2", 185000), "");
  std::string why;
  EXPECT_EQ(longest_recorded_save_ms(path, &why), 185000) << "the newest record, 3 MiB into the file";
  EXPECT_EQ(why, "");
}

// A file is kept small: past 64 KiB the next record leaves each kind's longest line
// (issue 34: a 1.82 MB file of an array's years of records).
TEST(SaveTimes, AFilePast64KiBIsCompactedToEachKindsLongest) {
  trainctl_test::temp_dir t;
  const std::string path = t / "save_times/88";
  ASSERT_EQ(record_save_time(path, "88", "n1", 1000), "");  // makes the directory
  std::string lines;
  for (int i = 0; lines.size() < (std::size_t{200} << 10); ++i) {
    lines += "1700000000 job=88 node=n1 save_ms=" + std::to_string(1000 + i % 500) + "\n";
    lines += "1700000000 job=88 node=n1 phase=eval ms=" + std::to_string(2000 + i % 700) + "\n";
  }
  trainctl_test::append(path, lines);
  ASSERT_GT(trainctl_test::read_file(path).size(), std::size_t{200} << 10);
  ASSERT_EQ(record_save_time(path, "89", "n2", 1200), "");
  ASSERT_EQ(record_phase_time(path, "89", "n2", kQuietPhase, 900), "");
  const std::string text = trainctl_test::read_file(path);
  EXPECT_LT(text.size(), 1024u) << "compacted";
  std::string why;
  EXPECT_EQ(longest_recorded_save_ms(path, &why), 1499);
  const auto phases = longest_recorded_phases(path, &why);
  EXPECT_EQ(phases.at("eval"), 2699);
  EXPECT_EQ(phases.at(kQuietPhase), 900) << "the record that came with the compaction is kept";
  EXPECT_EQ(why, "");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3) << text;
}

TEST(SaveTimes, ASymlinkOrFifoIsNeitherReadNorWritten) {
  trainctl_test::temp_dir t;
  t.write("elsewhere", "1 job=1 node=n1 save_ms=99000\n");
  ASSERT_EQ(symlink((t / "elsewhere").c_str(), (t / "link").c_str()), 0);
  std::string why;
  EXPECT_EQ(longest_recorded_save_ms(t / "link", &why), 0);
  EXPECT_NE(why.find("cannot read"), std::string::npos) << why;
  EXPECT_NE(record_save_time(t / "link", "1", "n1", 5000), "");
  ASSERT_EQ(mkfifo((t / "fifo").c_str(), 0600), 0);
  why.clear();
  EXPECT_EQ(longest_recorded_save_ms(t / "fifo", &why), 0) << "no hang on a FIFO";
  EXPECT_NE(why, "");
}

TEST(SaveTimes, AJobNameNamesItsOwnFileOnlyWhenItIsAPlainName) {
  setenv("TRAINCTL_SAVE_TIMES_DIR", "/somewhere", 1);
  EXPECT_EQ(save_times_path_for_name("train-7b_v2.1"), "/somewhere/name.train-7b_v2.1");
  EXPECT_EQ(save_times_path_for_name("12345"), "/somewhere/name.12345");  // never a job id's file
  for (const char* bad : {"", "../x", "a/b", ".hidden", "with space", "x$y"})
    EXPECT_EQ(save_times_path_for_name(bad), "") << bad;
  EXPECT_EQ(save_times_path_for_name(std::string(101, 'a')), "");
  unsetenv("TRAINCTL_SAVE_TIMES_DIR");
}

TEST(SaveTimes, OnlyAJobIdNamesAFile) {
  setenv("TRAINCTL_SAVE_TIMES_DIR", "/somewhere", 1);
  EXPECT_EQ(save_times_path("4242"), "/somewhere/4242");
  EXPECT_EQ(save_times_path("../4242"), "");
  EXPECT_EQ(save_times_path(""), "");
  unsetenv("TRAINCTL_SAVE_TIMES_DIR");
}

TEST(SaveTimes, AutoIsTheLongestSaveTimesAFactorPlusAMarginWithinBounds) {
  // None seen: the first-task default, at most half the time limit.
  EXPECT_EQ(auto_graceful_exit(0, 0).graceful, 10min);
  EXPECT_EQ(auto_graceful_exit(0, 3600).graceful, 10min);
  const auto first = auto_graceful_exit(0, 120);
  EXPECT_EQ(first.graceful, 1min);
  EXPECT_EQ(first.why, "1m (no save seen yet in this job array: 10m, at most half the time limit)");
  // 20 s: 20 x 1.5 + 30 = 60 s; 30 s: 75 s; rounded up to the second.
  EXPECT_EQ(auto_graceful_exit(20000, 0).graceful, 60s);
  EXPECT_EQ(auto_graceful_exit(30000, 0).graceful, 75s);
  EXPECT_EQ(auto_graceful_exit(20400, 0).graceful, 61s);
  EXPECT_EQ(auto_graceful_exit(30000, 0).why,
            "75s (the longest save in this job array took 30.0 s: x1.5 + 30s margin)");
  // A quick save still gets the floor; a save of an hour gets at most half the limit.
  EXPECT_EQ(auto_graceful_exit(2000, 0).graceful, 1min);
  EXPECT_NE(auto_graceful_exit(2000, 0).why.find("at least 1m"), std::string::npos);
  EXPECT_EQ(auto_graceful_exit(3600000, 4 * 3600).graceful, 5430s);
  EXPECT_EQ(auto_graceful_exit(3600000, 2 * 3600).graceful, 1h);
}

TEST(SaveTimes, PhaseTimesShareTheArraysFileWithTheSaves) {
  trainctl_test::temp_dir t;
  const std::string path = t / "save_times/77";
  std::string why;
  EXPECT_TRUE(longest_recorded_phases(path, &why).empty());
  EXPECT_EQ(record_save_time(path, "77", "n1", 25000), "");
  EXPECT_EQ(record_phase_time(path, "78", "n1", "eval", 41000), "");
  EXPECT_EQ(record_phase_time(path, "78", "n2", "eval", 30000), "");
  EXPECT_EQ(record_phase_time(path, "78", "n2", kQuietPhase, 2500), "");
  EXPECT_EQ(record_phase_time(path, "78", "n2", "save", 27000), "") << "a save is a save line";
  trainctl_test::append(path, "1 job=1 node=x phase=eval ms=-4\n1 job=1 node=x phase=eval ms=999999999999\n");
  const auto longest = longest_recorded_phases(path, &why);
  EXPECT_EQ(why, "");
  EXPECT_EQ(longest.at("save"), 27000);
  EXPECT_EQ(longest.at("eval"), 41000);
  EXPECT_EQ(longest.at(kQuietPhase), 2500);
  EXPECT_EQ(longest.size(), 3u);
  EXPECT_EQ(longest_recorded_save_ms(path, &why), 27000) << "auto's reader sees the same saves";
}
