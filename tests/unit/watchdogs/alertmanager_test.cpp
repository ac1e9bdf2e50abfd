// What trainwatch POSTs to Alertmanager: the labels a site routes on, the times, and the
// alert of an earlier severity ended, so that a finding leaves no stale alert behind.
#include "alertmanager.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "check_result.hpp"
#include "parse.hpp"
#include "sinks.hpp"

namespace trainctl {
namespace {

alert_message finding(const char* state, int status) {
  alert_message m;
  m.check = "job-running";
  m.target = "llama-7b";
  m.state = state;
  m.status = status;
  m.text = "no job named 'llama-7b' is running or pending";
  m.host = "login1";
  m.time = 1796235000;
  m.since = 1796234000;
  m.expires = m.time + 7200;
  m.labels = {{"job", "llama-7b"}};
  return m;
}

TEST(Alertmanager, AFiringAlertCarriesTheLabelsASiteRoutesOn) {
  const auto alerts = nlohmann::json::parse(alertmanager_payload(finding("FIRING", kCritical)));
  ASSERT_EQ(alerts.size(), 1u) << alerts.dump();
  const auto& a = alerts[0];
  EXPECT_EQ(a["labels"]["alertname"], "trainwatch_job_running");
  EXPECT_EQ(a["labels"]["check"], "job-running");
  EXPECT_EQ(a["labels"]["target"], "llama-7b");
  EXPECT_EQ(a["labels"]["job"], "llama-7b");
  EXPECT_EQ(a["labels"]["severity"], "critical");
  EXPECT_EQ(a["labels"]["instance"], "login1");
  EXPECT_FALSE(a["labels"]["user"].get<std::string>().empty());
  EXPECT_EQ(a["startsAt"], rfc3339_utc(1796234000)) << "when the status began, not when it was sent";
  EXPECT_EQ(a["endsAt"], rfc3339_utc(1796235000 + 7200));
  EXPECT_EQ(a["annotations"]["description"], "no job named 'llama-7b' is running or pending");
  EXPECT_NE(a["annotations"]["summary"].get<std::string>().find("FIRING"), std::string::npos);
}

TEST(Alertmanager, ANewSeverityEndsTheOneSentBefore) {
  alert_message m = finding("REPEAT", kCritical);
  m.previous = kWarning;
  const auto alerts = nlohmann::json::parse(alertmanager_payload(m));
  ASSERT_EQ(alerts.size(), 2u) << alerts.dump();
  EXPECT_EQ(alerts[0]["labels"]["severity"], "critical");
  EXPECT_EQ(alerts[1]["labels"]["severity"], "warning");
  EXPECT_EQ(alerts[1]["endsAt"], rfc3339_utc(m.time));
  m.previous = kCritical;  // the same severity repeated: nothing to end
  EXPECT_EQ(nlohmann::json::parse(alertmanager_payload(m)).size(), 1u);
}

TEST(Alertmanager, AResolvedAlertEndsTheLastOneSentOrEveryOneItMayHaveBeen) {
  alert_message m = finding("RESOLVED", kOk);
  m.expires = 0;
  m.previous = kCritical;
  auto alerts = nlohmann::json::parse(alertmanager_payload(m));
  ASSERT_EQ(alerts.size(), 1u) << alerts.dump();
  EXPECT_EQ(alerts[0]["labels"]["severity"], "critical");
  EXPECT_EQ(alerts[0]["endsAt"], rfc3339_utc(m.time));
  EXPECT_LE(alerts[0]["startsAt"].get<std::string>(), alerts[0]["endsAt"].get<std::string>())
      << "Alertmanager refuses an alert that ends before it starts";
  m.previous = -1;  // an alert state written before trainctl kept the severity sent
  alerts = nlohmann::json::parse(alertmanager_payload(m));
  EXPECT_EQ(alerts.size(), 3u) << alerts.dump();
}

TEST(Alertmanager, ASpooledMessageKeepsItsTimesLabelsAndPreviousSeverity) {
  alert_message m = finding("REPEAT", kCritical);
  m.previous = kWarning;
  const alert_message back = alert_message::from_json(m.json());
  EXPECT_EQ(back.since, m.since);
  EXPECT_EQ(back.expires, m.expires);
  EXPECT_EQ(back.previous, kWarning);
  EXPECT_EQ(back.labels, m.labels);
  alert_message old = finding("FIRING", kCritical);  // spooled by an older trainctl
  old.since = old.expires = 0;
  old.labels.clear();
  const auto alerts = nlohmann::json::parse(alertmanager_payload(alert_message::from_json(old.json())));
  EXPECT_EQ(alerts[0]["startsAt"], rfc3339_utc(old.time));
  EXPECT_GT(alerts[0]["endsAt"].get<std::string>(), rfc3339_utc(old.time + 3600));
}

TEST(Alertmanager, TheSinkPostsToTheApiV2AndItsUrlIsNoSecret) {
  sink s = parse_sink("alertmanager:http://127.0.0.1:9093");
  EXPECT_EQ(s.type, sink::kind::alertmanager);
  EXPECT_EQ(s.url, "http://127.0.0.1:9093/api/v2/alerts");
  EXPECT_FALSE(s.secret_in_spec) << "an Alertmanager address may be given on the command line";
  EXPECT_EQ(s.redacted(), "alertmanager http://127.0.0.1:9093");
  EXPECT_EQ(parse_sink("alertmanager:https://am.example.org/prefix/").url,
            "https://am.example.org/prefix/api/v2/alerts");
  s = parse_sink("alertmanager:https://ops:TOKEN@am.example.org");
  EXPECT_TRUE(s.secret_in_spec) << "credentials in the URL";
  EXPECT_EQ(s.redacted().find("TOKEN"), std::string::npos);
  EXPECT_THROW(parse_sink("alertmanager:ftp://am"), parse_error);
  EXPECT_THROW(parse_sink("alertmanager:env:TRAINCTL_TEST_NO_SUCH_VAR"), parse_error);
  setenv("TRAINCTL_TEST_AM", "http://[::1]:9093", 1);
  EXPECT_EQ(parse_sink("alertmanager:env:TRAINCTL_TEST_AM").url, "http://[::1]:9093/api/v2/alerts");
  unsetenv("TRAINCTL_TEST_AM");
}

}  // namespace
}  // namespace trainctl
