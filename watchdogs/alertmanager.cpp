#include "alertmanager.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <nlohmann/json.hpp>

#include "check_result.hpp"
#include "time_text.hpp"

namespace trainctl {
namespace {

const char* const kSeverities[] = {"warning", "critical", "unknown"};
// A FIRING spooled without `expires` (by an older trainctl): the default --repeat, twice.
constexpr std::int64_t kDefaultLifeS = std::int64_t{8} * 3600;

std::string severity(int status) {
  switch (status) {
    case kWarning:
      return "warning";
    case kCritical:
      return "critical";
    default:
      return "unknown";  // UNKNOWN: the check could not tell
  }
}

std::string user_name() {
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buf[4096];
  if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &found) == 0 && found != nullptr) return json_safe(pw.pw_name);
  return std::to_string(getuid());
}

}  // namespace

std::string rfc3339_utc(std::int64_t unix_s) { return time_text(unix_s, "%Y-%m-%dT%H:%M:%SZ", time_zone::utc); }

std::string alertmanager_alerts_url(const std::string& base) {
  std::string url = base;
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url + "/api/v2/alerts";
}

std::string alertmanager_payload(const alert_message& m) {
  std::string alertname = "trainwatch_" + m.check;
  std::replace(alertname.begin(), alertname.end(), '-', '_');
  nlohmann::json labels = {
      {"alertname", alertname}, {"check", m.check}, {"target", m.target}, {"user", user_name()}, {"instance", m.host}};
  for (const auto& [k, v] : m.labels) labels[k] = v;
  const nlohmann::json annotations = {{"summary", m.subject()}, {"description", m.text}};
  // Alertmanager refuses an alert that ends before it starts.
  const std::int64_t starts = m.since != 0 ? std::min(m.since, m.time) : m.time;
  nlohmann::json alerts = nlohmann::json::array();
  const auto add = [&](const std::string& sev, std::int64_t ends) {
    nlohmann::json a = {{"labels", labels}, {"annotations", annotations}, {"startsAt", rfc3339_utc(starts)}};
    a["labels"]["severity"] = sev;
    a["endsAt"] = rfc3339_utc(ends);
    alerts.push_back(std::move(a));
  };
  const std::string now_severity = m.state != "RESOLVED" ? severity(m.status) : "";
  if (!now_severity.empty()) add(now_severity, m.expires > m.time ? m.expires : m.time + kDefaultLifeS);
  // The alert this one replaces (another severity) or ends; not known (alert state of
  // an older trainctl): every severity this finding may have had ends.
  if (m.previous >= 0) {
    if (severity(m.previous) != now_severity) add(severity(m.previous), m.time);
  } else if (now_severity.empty()) {
    for (const char* sev : kSeverities) add(sev, m.time);
  }
  return alerts.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace trainctl
