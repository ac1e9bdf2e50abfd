// Where alerts go: smtp(s):// mail through libcurl, sendmail:ADDRESS, slack:URL (an
// incoming webhook), webhook:URL (a generic JSON POST), alertmanager:URL (Alertmanager's
// API v2, alertmanager_payload). Secrets (passwords, webhook
// URLs) never appear in what redacted() returns, and only that is ever logged.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "alert_message.hpp"

namespace trainctl {

struct sink {
  enum class kind { smtp, sendmail, slack, webhook, alertmanager } type = kind::webhook;
  std::string spec;  // as given: kept for the spool, never logged
  std::string url;   // smtp[s]://host:port or http(s)://... (alertmanager: .../api/v2/alerts)
  std::string user, password;
  std::string from;
  std::vector<std::string> to;
  bool starttls = false;  // STARTTLS required (smtp://...?starttls=required)
  // The spec itself holds a secret (a password, a Slack or webhook URL): it may come
  // only from a file no one else can read, never from the command line.
  bool secret_in_spec = false;
  std::string redacted() const;
  // Names this sink in the spool without its secrets; the same sink gives the same id.
  std::string id() const;
};

// smtp://[user[:password]@]host[:port]?from=A&to=B[&to=C][&starttls=required]
// smtps://...   sendmail:ADDRESS[,ADDRESS]   slack:https://...   webhook:http(s)://...
// alertmanager:http(s)://host:port[/prefix] (the alerts go to <that>/api/v2/alerts)
// slack:env:VAR, webhook:env:VAR and alertmanager:env:VAR read the URL from VAR.
// Credentials need TLS (smtps:// or starttls=required). TRAINWATCH_SMTP_PASSWORD is the
// password of the user of the one host named by TRAINWATCH_SMTP_HOST.
// Throws parse_error naming what is wrong and what is accepted, never the secret.
sink parse_sink(const std::string& spec);

struct delivery_options {
  int tries = 3;
  std::chrono::milliseconds backoff{1000};   // doubled after each failed try
  std::chrono::milliseconds timeout{10000};  // per try
  std::chrono::seconds max_retry_after{60};  // longest Retry-After honoured in one run
  std::chrono::seconds budget{60};           // what one run spends on the spool in all
};

// Sends; true on success. `error` gets one line (no secrets) on failure.
bool deliver(const sink& s, const alert_message& m, const delivery_options& o, std::string* error);

// The RFC 5322 message as sent by mail sinks (exposed for tests).
std::string mail_text(const sink& s, const alert_message& m);

}  // namespace trainctl
