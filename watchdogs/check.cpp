#include "check.hpp"

#include <unistd.h>

namespace trainctl {

const char* status_name(int s) {
  switch (s) {
    case kOk:
      return "OK";
    case kWarning:
      return "WARNING";
    case kCritical:
      return "CRITICAL";
    default:
      return "UNKNOWN";
  }
}

int worst_status(const std::vector<check_result>& results) {
  // CRITICAL > UNKNOWN > WARNING > OK
  auto rank = [](int s) { return s == kCritical ? 3 : s == kUnknown ? 2 : s == kWarning ? 1 : 0; };
  int worst = kOk;
  for (const auto& r : results)
    if (rank(r.status) > rank(worst)) worst = r.status;
  return worst;
}

std::string host_name() {
  char host[256] = "localhost";
  if (gethostname(host, sizeof host - 1) != 0) return "localhost";
  host[sizeof host - 1] = '\0';
  return host;
}

}  // namespace trainctl
