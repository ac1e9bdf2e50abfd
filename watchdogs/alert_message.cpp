#include "alert_message.hpp"

#include <nlohmann/json.hpp>

#include "check_result.hpp"
#include "parse.hpp"
#include "time_text.hpp"

namespace trainctl {

std::string rfc2822_date(std::int64_t t) { return time_text(t, "%a, %d %b %Y %H:%M:%S +0000", time_zone::utc); }

std::string alert_message::subject() const {
  return "[trainwatch " + state + "] " + check + " " + target + ": " + status_name(status);
}

std::string alert_message::body() const {
  std::string b = text + "\n\ncheck:  " + check + "\ntarget: " + target + "\nstatus: " + status_name(status) +
                  "\nstate:  " + state + "\nhost:   " + host + "\ntime:   " + rfc2822_date(time) + "\n";
  for (const auto& [k, v] : figures) b += k + ": " + std::to_string(v) + "\n";
  return b;
}

std::string alert_message::json() const {
  nlohmann::json j = {{"check", check}, {"target", target}, {"state", state}, {"status", status_name(status)},
                      {"text", text},   {"host", host},     {"time", time},   {"subject", subject()}};
  nlohmann::json f = nlohmann::json::object();
  for (const auto& [k, v] : figures) f[k] = v;
  j["figures"] = f;
  if (since != 0) j["since"] = since;
  if (expires != 0) j["expires"] = expires;
  if (previous >= 0) j["previous"] = status_name(previous);
  if (!labels.empty()) {
    nlohmann::json l = nlohmann::json::object();
    for (const auto& [k, v] : labels) l[k] = v;
    j["labels"] = l;
  }
  return j.dump();
}

alert_message alert_message::from_json(const std::string& text) {
  const auto j = nlohmann::json::parse(text);
  alert_message m;
  m.check = j.at("check");
  m.target = j.at("target");
  m.state = j.at("state");
  m.status = parse_status(j.at("status").get<std::string>());
  if (m.status < 0) throw parse_error("alert status '" + j.at("status").get<std::string>() + "' is not a status");
  m.text = j.at("text");
  m.host = j.at("host");
  m.time = j.at("time");
  const nlohmann::json figures = j.value("figures", nlohmann::json::object());  // alive while items() runs
  for (const auto& [k, v] : figures.items()) m.figures.emplace_back(k, v.get<double>());
  // Spooled by an older trainwatch: none of these.
  m.since = j.value("since", std::int64_t{0});
  m.expires = j.value("expires", std::int64_t{0});
  m.previous = parse_status(j.value("previous", std::string()));
  const nlohmann::json labels = j.value("labels", nlohmann::json::object());
  for (const auto& [k, v] : labels.items()) m.labels.emplace_back(k, v.get<std::string>());
  return m;
}

}  // namespace trainctl
