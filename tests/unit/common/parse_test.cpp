#include "parse.hpp"

#include <gtest/gtest.h>

#include <csignal>

using namespace trainctl;
using std::chrono::milliseconds;

TEST(ParseDuration, AcceptsUnitsAndBareNumbers) {
  EXPECT_EQ(parse_duration("90s"), milliseconds(90000));
  EXPECT_EQ(parse_duration("10m"), milliseconds(600000));
  EXPECT_EQ(parse_duration("1h"), milliseconds(3600000));
  EXPECT_EQ(parse_duration("1.5h"), milliseconds(5400000));
  EXPECT_EQ(parse_duration("250ms"), milliseconds(250));
  EXPECT_EQ(parse_duration(" 2d "), milliseconds(2 * 86400000LL));
  EXPECT_EQ(parse_duration("10"), milliseconds(10000));
  EXPECT_EQ(parse_duration("10", 'm'), milliseconds(600000));
}

TEST(ParseDuration, RefusesWithALineThatSaysWhatIsAccepted) {
  for (const char* bad : {"", "abc", "-5", "0", "10x", "1e3", "nan", "inf", "99999h", ".", "1..2"}) {
    try {
      parse_duration(bad, 'm');
      ADD_FAILURE() << "accepted " << bad;
    } catch (const parse_error& e) {
      EXPECT_NE(std::string(e.what()).find("accepted"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(parse_duration("0", 's', true), milliseconds(0));
}

TEST(ParseSize, BinaryMultiples) {
  EXPECT_EQ(parse_size("512"), 512u);
  EXPECT_EQ(parse_size("4K"), 4096u);
  EXPECT_EQ(parse_size("2G"), 2ull << 30);
  EXPECT_EQ(parse_size("1.5T"), 3ull << 39);
  EXPECT_EQ(parse_size("10GiB"), 10ull << 30);
  EXPECT_EQ(parse_size("3PB"), 3ull << 50);
  EXPECT_EQ(parse_size("7B"), 7u);
  for (const char* bad : {"", "-1G", "2X", "G", "2GG", "99999999P", "1Bi"})
    EXPECT_THROW(parse_size(bad), parse_error) << bad;
}

TEST(ParseThreshold, PercentOrSize) {
  auto p = parse_threshold("5%");
  EXPECT_EQ(p.type, threshold::kind::percent);
  EXPECT_DOUBLE_EQ(p.percent, 5);
  auto b = parse_threshold("2G");
  EXPECT_EQ(b.type, threshold::kind::bytes);
  EXPECT_EQ(b.bytes, 2ull << 30);
  for (const char* bad : {"-5%", "0%", "101%", "%", "0", "-2G", "abc"})
    EXPECT_THROW(parse_threshold(bad), parse_error) << bad;
}

TEST(ParseUnixTime, SecondsSince1970) {
  EXPECT_DOUBLE_EQ(parse_unix_time("1767225600"), 1767225600.0);
  EXPECT_DOUBLE_EQ(parse_unix_time("1767225600.5"), 1767225600.5);
  for (const char* bad : {"soon", "", "-1", "12", "1767225600s", "1e10"})
    EXPECT_THROW(parse_unix_time(bad), parse_error) << bad;
}

TEST(ParseSignal, NamesAndNumbers) {
  EXPECT_EQ(parse_signal("USR1"), SIGUSR1);
  EXPECT_EQ(parse_signal("sigusr2"), SIGUSR2);
  EXPECT_EQ(parse_signal("TERM"), SIGTERM);
  EXPECT_EQ(parse_signal("10"), 10);
  EXPECT_THROW(parse_signal("NOPE"), parse_error);
  EXPECT_THROW(parse_signal("0"), parse_error);
  EXPECT_THROW(parse_signal("65"), parse_error);
  EXPECT_EQ(parse_signal_list("USR1,TERM,USR1"), (std::vector<int>{SIGUSR1, SIGTERM}));
  EXPECT_TRUE(parse_signal_list("none").empty());
  EXPECT_EQ(signal_name(SIGUSR1), "USR1");
}

TEST(ParseNamedPaths, NamesAreChecked) {
  auto v = parse_named_paths("eval=/tmp/eval, dump=/tmp/dump");
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[1].name, "dump");
  EXPECT_EQ(v[1].path, "/tmp/dump");
  EXPECT_THROW(parse_named_paths("noequals"), parse_error);
  EXPECT_THROW(parse_named_paths("bad name=/x"), parse_error);
  EXPECT_THROW(parse_named_paths("=/x"), parse_error);
}

TEST(ParseInt, Range) {
  EXPECT_EQ(parse_int("42", 1, 100), 42);
  EXPECT_THROW(parse_int("0", 1, 100), parse_error);
  EXPECT_THROW(parse_int("4x", 1, 100), parse_error);
  EXPECT_THROW(parse_int("99999999999999999999", 1, 100), parse_error);
}

TEST(Format, RoundTrips) {
  EXPECT_EQ(format_duration(milliseconds(600000)), "10m");
  EXPECT_EQ(format_duration(milliseconds(1500)), "1500ms");
  EXPECT_EQ(format_size(2ull << 30), "2.0G");
}

// One splitter; each list states its own rule for empty pieces.
TEST(Parse, SplitKeepsEmptyPiecesForTheCallerToJudge) {
  using v = std::vector<std::string_view>;
  EXPECT_EQ(split("a,,b", ','), (v{"a", "", "b"}));
  EXPECT_EQ(split("", ','), (v{""}));
  EXPECT_EQ(split("a,", ','), (v{"a", ""}));
  EXPECT_EQ(parse_named_paths("a=/x,").size(), 1u) << "a trailing comma is accepted in named paths";
  EXPECT_THROW(parse_named_paths("a=/x,,b=/y"), parse_error);
  EXPECT_THROW(parse_signal_list("USR1,"), parse_error) << "but not in signal lists";
}
