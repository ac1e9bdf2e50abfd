#include "time_text.hpp"

#include <ctime>

namespace trainctl {

std::string time_text(std::int64_t unix_s, const char* format, time_zone zone) {
  const std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  const bool broken = zone == time_zone::utc ? gmtime_r(&t, &tm) != nullptr : localtime_r(&t, &tm) != nullptr;
  char buf[96];
  if (!broken || std::strftime(buf, sizeof buf, format, &tm) == 0) return "?";
  return buf;
}

}  // namespace trainctl
