#include "sinks.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "alertmanager.hpp"
#include "check_result.hpp"
#include "curl_loader.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "parse.hpp"
#include "subprocess.hpp"
#include "time_text.hpp"

namespace trainctl {
namespace {

std::string url_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::strtol(s.substr(i + 1, 2).c_str(), nullptr, 16));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

bool plausible_address(const std::string& a) {
  const size_t at = a.find('@');
  return at != std::string::npos && at > 0 && at + 1 < a.size() && a.find_first_of(" <>\r\n,") == std::string::npos;
}

// TRAINWATCH_SMTP_PASSWORD, if TRAINWATCH_SMTP_HOST names this host (host or
// host:port): a spec pointed at another server never gets it.
std::string env_password(const std::string& authority) {
  std::string pw = env_text(env_var::kTrainwatchSmtpPassword);
  if (pw.empty()) return "";
  const std::string host = env_text(env_var::kTrainwatchSmtpHost);
  const std::string bare =
      authority.substr(0, authority.rfind(':') == std::string::npos ? std::string::npos : authority.rfind(':'));
  if (!env_set(env_var::kTrainwatchSmtpHost) || (authority != host && bare != host))
    throw parse_error("smtp sink " + authority + ": TRAINWATCH_SMTP_PASSWORD is only for the host in " +
                      "TRAINWATCH_SMTP_HOST (" +
                      (env_set(env_var::kTrainwatchSmtpHost) ? host : std::string("not set")) + ")");
  return pw;
}

const std::string kAccepted =
    "accepted: smtp://[user@]host[:port]?from=A&to=B, smtps://..., sendmail:ADDRESS, slack:env:VAR, "
    "webhook:env:VAR, alertmanager:http(s)://HOST:PORT, alertmanager:env:VAR, and in a --notify-file "
    "slack:https://hooks... and webhook:http(s)://...";

struct curl_handle {  // RAII for CURL* and its header lists
  const curl_api& api;
  CURL* c = api.easy_init();
  curl_slist* headers = nullptr;
  curl_slist* rcpt = nullptr;
  explicit curl_handle(const curl_api& a) : api(a) {}
  ~curl_handle() {
    if (headers != nullptr) api.slist_free_all(headers);
    if (rcpt != nullptr) api.slist_free_all(rcpt);
    if (c != nullptr) api.easy_cleanup(c);
  }
  curl_handle(const curl_handle&) = delete;
  curl_handle& operator=(const curl_handle&) = delete;
};

struct upload {
  const std::string* text;
  size_t pos = 0;
};

size_t read_cb(char* buf, size_t size, size_t n, void* user) {
  auto* u = static_cast<upload*>(user);
  const size_t len = std::min(size * n, u->text->size() - u->pos);
  std::memcpy(buf, u->text->data() + u->pos, len);  // NOLINT(bugprone-not-null-terminated-result): curl takes bytes
  u->pos += len;
  return len;
}

size_t discard_cb(char*, size_t size, size_t n, void*) { return size * n; }

// only_protocols: the transfer may use these protocols and no other (no file:// or
// gopher:// through a redirect or a bad URL). The libcurl found at run time may be older
// or newer than the headers built against (the wheel's are 7.74's): CURLOPT_PROTOCOLS_STR
// (7.85, its number fixed) where the library knows it, else the older bit mask.
bool only_protocols(const curl_api& api, CURL* c, const char* names, long mask) {
#if LIBCURL_VERSION_NUM >= 0x075500
  const CURLoption by_name = CURLOPT_PROTOCOLS_STR;
#else
  const auto by_name = static_cast<CURLoption>(CURLOPTTYPE_STRINGPOINT + 318);
#endif
  const CURLcode rc = api.easy_setopt(c, by_name, names);
  if (rc != CURLE_UNKNOWN_OPTION) return rc == CURLE_OK;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  return api.easy_setopt(c, CURLOPT_PROTOCOLS, mask) == CURLE_OK;
#pragma GCC diagnostic pop
}

struct http_reply {
  long code = 0;
  long retry_after = -1;
};

size_t header_cb(char* buf, size_t size, size_t n, void* user) {
  auto* r = static_cast<http_reply*>(user);
  const std::string line(buf, size * n);
  if (line.size() > 12 && strncasecmp(line.c_str(), "Retry-After:", 12) == 0) {
    // Seconds; an HTTP date or garbage counts as 1 s. Clamped: a huge value must not
    // overflow the wait (it slept until killed); longer than a run waits is refused later.
    char* end = nullptr;
    const long long v = std::strtoll(line.c_str() + 12, &end, 10);
    r->retry_after = end == line.c_str() + 12 || v < 0 ? 1 : static_cast<long>(std::min<long long>(v, 86400));
  }
  return size * n;
}

// One try; `retry_after` set (seconds) when the server asked to wait.
bool try_http(const sink& s, const std::string& payload, const delivery_options& o, std::string* error,
              long* retry_after) {
  std::string why;
  const curl_api* api = load_curl(&why);
  if (api == nullptr) return *error = s.redacted() + ": " + why, false;
  curl_handle h(*api);
  if (h.c == nullptr) return *error = "curl_easy_init failed", false;
  http_reply reply;
  h.headers = api->slist_append(h.headers, "Content-Type: application/json");
  api->easy_setopt(h.c, CURLOPT_URL, s.url.c_str());
  api->easy_setopt(h.c, CURLOPT_HTTPHEADER, h.headers);
  api->easy_setopt(h.c, CURLOPT_POSTFIELDS, payload.c_str());
  api->easy_setopt(h.c, CURLOPT_POSTFIELDSIZE, static_cast<long>(payload.size()));
  api->easy_setopt(h.c, CURLOPT_TIMEOUT_MS, static_cast<long>(o.timeout.count()));
  api->easy_setopt(h.c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.timeout.count()));
  api->easy_setopt(h.c, CURLOPT_NOSIGNAL, 1L);
  api->easy_setopt(h.c, CURLOPT_WRITEFUNCTION, discard_cb);
  api->easy_setopt(h.c, CURLOPT_HEADERFUNCTION, header_cb);
  api->easy_setopt(h.c, CURLOPT_HEADERDATA, &reply);
  if (!only_protocols(*api, h.c, "http,https", CURLPROTO_HTTP | CURLPROTO_HTTPS))
    return *error = s.redacted() + ": this libcurl cannot be limited to http and https", false;
  const CURLcode rc = api->easy_perform(h.c);
  if (rc != CURLE_OK) return *error = s.redacted() + ": " + api->easy_strerror(rc), false;
  api->easy_getinfo(h.c, CURLINFO_RESPONSE_CODE, &reply.code);
  if (reply.code >= 200 && reply.code < 300) return true;
  if (reply.code == 429) *retry_after = reply.retry_after >= 0 ? reply.retry_after : 1;
  *error = s.redacted() + ": HTTP " + std::to_string(reply.code);
  return false;
}

bool try_smtp(const sink& s, const alert_message& m, const delivery_options& o, std::string* error) {
  std::string why;
  const curl_api* api = load_curl(&why);
  if (api == nullptr) return *error = s.redacted() + ": " + why, false;
  curl_handle h(*api);
  if (h.c == nullptr) return *error = "curl_easy_init failed", false;
  const std::string text = mail_text(s, m);
  upload up{&text};
  api->easy_setopt(h.c, CURLOPT_URL, s.url.c_str());
  if (!s.user.empty()) {
    api->easy_setopt(h.c, CURLOPT_USERNAME, s.user.c_str());
    api->easy_setopt(h.c, CURLOPT_PASSWORD, s.password.c_str());
  }
  // Asked for STARTTLS: required, never a silent fall back to plaintext.
  api->easy_setopt(h.c, CURLOPT_USE_SSL,
                   s.starttls ? static_cast<long>(CURLUSESSL_ALL) : static_cast<long>(CURLUSESSL_NONE));
  const std::string from = "<" + s.from + ">";
  api->easy_setopt(h.c, CURLOPT_MAIL_FROM, from.c_str());
  for (const auto& t : s.to) h.rcpt = api->slist_append(h.rcpt, ("<" + t + ">").c_str());
  api->easy_setopt(h.c, CURLOPT_MAIL_RCPT, h.rcpt);
  api->easy_setopt(h.c, CURLOPT_READFUNCTION, read_cb);
  api->easy_setopt(h.c, CURLOPT_READDATA, &up);
  api->easy_setopt(h.c, CURLOPT_UPLOAD, 1L);
  api->easy_setopt(h.c, CURLOPT_TIMEOUT_MS, static_cast<long>(o.timeout.count()));
  api->easy_setopt(h.c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o.timeout.count()));
  api->easy_setopt(h.c, CURLOPT_NOSIGNAL, 1L);
  if (!only_protocols(*api, h.c, "smtp,smtps", CURLPROTO_SMTP | CURLPROTO_SMTPS))
    return *error = s.redacted() + ": this libcurl cannot be limited to smtp and smtps", false;
  const CURLcode rc = api->easy_perform(h.c);
  if (rc != CURLE_OK) return *error = s.redacted() + ": " + api->easy_strerror(rc), false;
  return true;
}

bool try_sendmail(const sink& s, const alert_message& m, const delivery_options& o, std::string* error) {
  child_spec spec;
  spec.argv = {env_or(env_var::kTrainctlSendmail, "/usr/sbin/sendmail"), "-t", "-oi"};
  spec.input = mail_text(s, m);
  spec.deadline = o.timeout;
  const child_result r = run_child(spec);
  if (r.ok()) return true;
  *error = s.redacted() + ": " + r.error;
  return false;
}

}  // namespace

std::string sink::redacted() const {
  switch (type) {
    case kind::smtp:  // url carries no credentials: parse_sink keeps them apart
      return url + " (to " + std::to_string(to.size()) + " recipient" + (to.size() == 1 ? ")" : "s)");
    case kind::sendmail:
      return "sendmail";
    case kind::slack:
      return "slack webhook";  // the URL is the secret
    case kind::webhook:
    case kind::alertmanager: {
      // scheme://host[:port] only: paths, queries and fragments often carry tokens
      const size_t scheme = url.find("://");
      const size_t slash = url.find_first_of("/?#", scheme == std::string::npos ? 0 : scheme + 3);
      std::string base = url.substr(0, slash);
      const size_t at = base.find('@');
      if (at != std::string::npos) base = base.substr(0, scheme + 3) + base.substr(at + 1);
      return (type == kind::webhook ? "webhook " : "alertmanager ") + base;
    }
  }
  return "sink";
}

std::string sink::id() const {
  // FNV-1a over what tells sinks apart; the password is not part of it.
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&](const std::string& part) {
    for (unsigned char c : part + '\x1f') h = (h ^ c) * 1099511628211ull;
  };
  mix(std::to_string(static_cast<int>(type)));
  mix(url);
  mix(user);
  mix(from);
  for (const auto& t : to) mix(t);
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

sink parse_sink(const std::string& spec) {
  sink s;
  s.spec = spec;
  auto starts = [&](const char* p) { return spec.compare(0, std::strlen(p), p) == 0; };
  if (starts("smtp://") || starts("smtps://")) {
    s.type = sink::kind::smtp;
    const size_t scheme_end = spec.find("://") + 3;
    const size_t q = spec.find('?');
    std::string authority = spec.substr(scheme_end, q == std::string::npos ? std::string::npos : q - scheme_end);
    if (!authority.empty() && authority.back() == '/') authority.pop_back();
    const size_t at = authority.rfind('@');
    if (at != std::string::npos) {
      const std::string cred = authority.substr(0, at);
      authority = authority.substr(at + 1);
      const size_t colon = cred.find(':');
      s.user = url_decode(cred.substr(0, colon));
      if (colon != std::string::npos) s.password = url_decode(cred.substr(colon + 1));
      s.secret_in_spec = !s.password.empty();
      if (s.password.empty()) s.password = env_password(authority);
    }
    if (authority.empty() || authority.find_first_of("/ ") != std::string::npos)
      throw parse_error("'" + spec.substr(0, scheme_end) + "...' has no host; " + kAccepted);
    s.url = spec.substr(0, scheme_end) + authority;
    const std::string query = q == std::string::npos ? "" : spec.substr(q + 1);
    for (std::string_view piece : split(query, '&')) {  // empty pieces ("a=b&&c=d") are nothing
      const std::string kv(piece);
      const size_t eq = kv.find('=');
      const std::string k = kv.substr(0, eq), v = eq == std::string::npos ? "" : url_decode(kv.substr(eq + 1));
      if (k == "from")
        s.from = v;
      else if (k == "to")
        s.to.push_back(v);
      else if (k == "starttls") {
        if (v != "required") throw parse_error("smtp sink: starttls=" + v + "; accepted: starttls=required");
        s.starttls = true;
      } else if (!k.empty()) {
        throw parse_error("smtp sink: unknown parameter '" + k + "'; accepted: from, to, starttls");
      }
    }
    if (!plausible_address(s.from)) throw parse_error("smtp sink: from=" + s.from + " is not an address; " + kAccepted);
    if (s.to.empty()) throw parse_error("smtp sink: no to= address; " + kAccepted);
    for (const auto& t : s.to)
      if (!plausible_address(t)) throw parse_error("smtp sink: to=" + t + " is not an address");
    if (s.starttls && starts("smtps://")) throw parse_error("smtp sink: smtps:// is TLS already; drop starttls");
    // AUTH over plain smtp:// sends the password in clear (AUTH PLAIN seen on the wire).
    if (!s.user.empty() && starts("smtp://") && !s.starttls)
      throw parse_error("smtp sink " + s.url +
                        ": a user means credentials, which need TLS; use smtps:// or add "
                        "&starttls=required");
    return s;
  }
  if (starts("sendmail:")) {
    s.type = sink::kind::sendmail;
    for (std::string_view piece : split(std::string_view(spec).substr(9), ',')) {  // an empty one is no address
      const std::string a(piece);
      if (!plausible_address(a)) throw parse_error("sendmail sink: '" + a + "' is not an address; " + kAccepted);
      s.to.push_back(a);
    }
    s.from = (env_set(env_var::kUser) ? env_text(env_var::kUser) : "trainwatch") + "@" + host_name();
    return s;
  }
  if (starts("slack:") || starts("webhook:") || starts("alertmanager:")) {
    s.type = starts("slack:") ? sink::kind::slack : starts("webhook:") ? sink::kind::webhook : sink::kind::alertmanager;
    const char* kind_name = s.type == sink::kind::slack     ? "slack"
                            : s.type == sink::kind::webhook ? "webhook"
                                                            : "alertmanager";
    s.url = spec.substr(spec.find(':') + 1);
    if (s.url.compare(0, 4, "env:") == 0) {
      const std::string var = s.url.substr(4);
      const std::string v = var.empty() ? "" : env_text(var.c_str());
      if (v.empty())
        throw parse_error(std::string(kind_name) + " sink: environment variable '" + var + "' is not set (" +
                          kind_name + ":env:VAR takes the URL from VAR)");
      s.url = v;
    } else {
      // The URL is the token; Alertmanager's only where it holds credentials or a query.
      s.secret_in_spec = s.type != sink::kind::alertmanager || s.url.find_first_of("@?#") != std::string::npos;
    }
    if (s.url.compare(0, 7, "http://") != 0 && s.url.compare(0, 8, "https://") != 0)
      throw parse_error(std::string(kind_name) + " sink: the URL must start with http:// or https://; " + kAccepted);
    if (s.url.find_first_of(" \r\n") != std::string::npos) throw parse_error("sink URL contains white space");
    if (s.type == sink::kind::alertmanager) s.url = alertmanager_alerts_url(s.url);
    return s;
  }
  // Only the scheme is echoed: whatever follows (or a whole spec without one) may be a secret.
  const size_t colon = spec.find(':');
  if (colon > 16)  // npos too: no scheme at all
    throw parse_error("a sink of " + std::to_string(spec.size()) + " characters with no known scheme; " + kAccepted);
  throw parse_error("'" + spec.substr(0, colon) + ":...' is not a sink; " + kAccepted);
}

std::string mail_text(const sink& s, const alert_message& m) {
  std::string to;
  for (const auto& t : s.to) to += (to.empty() ? "" : ", ") + t;
  static std::mt19937_64 rng{std::random_device{}()};
  char id[32];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(rng()));
  const std::string domain = s.from.substr(s.from.find('@') + 1);
  // Subject and body lines carry no CR or LF of their own: a target cannot inject headers.
  std::string subject = m.subject();
  for (char& c : subject)
    if (c == '\r' || c == '\n') c = ' ';
  std::string body;
  for (char c : m.body()) body += c == '\n' ? std::string("\r\n") : std::string(1, c == '\r' ? ' ' : c);
  return "Date: " + rfc2822_date(m.time) + "\r\nFrom: trainwatch <" + s.from + ">\r\nTo: " + to +
         "\r\nSubject: " + subject + "\r\nMessage-ID: <" + std::to_string(m.time) + "." + id + "@" + domain +
         ">\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nAuto-Submitted: auto-generated\r\n\r\n" +
         body;
}

bool deliver(const sink& s, const alert_message& m, const delivery_options& o, std::string* error) {
  std::string why;
  if (s.type != sink::kind::sendmail && load_curl(&why) == nullptr) {  // no retry can mend that
    *error = s.redacted() + ": " + why;
    return false;
  }
  std::string err;
  auto backoff = o.backoff;
  auto waited = std::chrono::seconds(0);
  for (int attempt = 1; attempt <= o.tries; ++attempt) {
    long retry_after = -1;
    bool ok = false;
    switch (s.type) {
      case sink::kind::smtp:
        ok = try_smtp(s, m, o, &err);
        break;
      case sink::kind::sendmail:
        ok = try_sendmail(s, m, o, &err);
        break;
      case sink::kind::slack: {
        const nlohmann::json j = {{"text", "*" + m.subject() + "*\n" + m.text}};
        ok = try_http(s, j.dump(), o, &err, &retry_after);
        break;
      }
      case sink::kind::webhook:
        ok = try_http(s, m.json(), o, &err, &retry_after);
        break;
      case sink::kind::alertmanager:
        ok = try_http(s, alertmanager_payload(m), o, &err, &retry_after);
        break;
    }
    if (ok) return true;
    if (attempt == o.tries) break;
    if (retry_after >= 0) {
      // Slack's rate limit: wait what it says, within what one run may spend.
      if (std::chrono::seconds(retry_after) > o.max_retry_after - waited) {
        err += " (Retry-After " + std::to_string(retry_after) + " s is longer than this run waits)";
        break;
      }
      waited += std::chrono::seconds(retry_after);
      std::this_thread::sleep_for(std::chrono::seconds(retry_after));
    } else {
      std::this_thread::sleep_for(backoff);
      backoff *= 2;
    }
  }
  if (error != nullptr) *error = err;
  return false;
}

}  // namespace trainctl
