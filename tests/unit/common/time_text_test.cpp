// One moment, as each reader needs it: UTC where nodes in other time zones must agree.
#include "time_text.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>

namespace trainctl {
namespace {

TEST(TimeText, UtcIsTheSameInEveryTimeZoneAndLocalFollowsTZ) {
  const char* before = std::getenv("TZ");
  const std::string saved = before != nullptr ? before : "";
  setenv("TZ", "Asia/Tokyo", 1);
  tzset();
  EXPECT_EQ(time_text(1796225154, "%Y%m%dT%H%M%S", time_zone::utc), "20261202T152554");
  EXPECT_EQ(local_timestamp(1796225154), "2026-12-03T00:25:54");
  if (before != nullptr)
    setenv("TZ", saved.c_str(), 1);
  else
    unsetenv("TZ");
  tzset();
}

TEST(TimeText, AFormatThatDoesNotFitIsAQuestionMark) {
  EXPECT_EQ(time_text(0, "", time_zone::utc), "?");
  EXPECT_EQ(time_text(0, "%Y-%m-%d", time_zone::utc), "1970-01-01");
}

}  // namespace
}  // namespace trainctl
