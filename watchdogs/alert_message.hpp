// One alert as trainwatch sends it to every sink and keeps it in the spool: what was
// found (check, target, status, text and figures), its place in the alert's life (state,
// since, expires, the status it replaces) and its labels. Each sink's own format is made
// from it (sinks.hpp, alertmanager.hpp); json() is the webhook's and the spool's.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace trainctl {

struct alert_message {
  std::string check, target, state;  // state: FIRING, REPEAT, RESOLVED
  int status = 0;
  std::string text, host;
  std::int64_t time = 0;
  std::int64_t since = 0;    // unix s: when the status it reports began (0: `time`)
  std::int64_t expires = 0;  // unix s: a FIRING or REPEAT not repeated by then is stale
  int previous = -1;         // the status of the alert this one replaces or ends; -1 none known
  std::vector<std::pair<std::string, double>> figures;
  std::vector<std::pair<std::string, std::string>> labels;  // check_result::labels
  std::string subject() const;
  std::string body() const;
  std::string json() const;                                 // the webhook payload
  static alert_message from_json(const std::string& text);  // throws on bad input
};

// RFC 2822's date, as mail headers carry it: "Wed, 02 Dec 2026 18:53:19 +0000".
std::string rfc2822_date(std::int64_t unix_s);

}  // namespace trainctl
