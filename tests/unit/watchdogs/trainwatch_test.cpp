#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <thread>

#include "alert_state.hpp"
#include "alerting.hpp"
#include "bad_nodes.hpp"
#include "checks.hpp"
#include "fixture.hpp"
#include "history.hpp"
#include "sinks.hpp"

using namespace trainctl;
using trainctl_test::scoped_env;
using trainctl_test::temp_dir;
using namespace std::chrono_literals;

TEST(AlertPolicy, OneAlertWhileFailingThenRepeatThenResolved) {
  alert_entry e;
  alert_policy p;
  p.repeat = std::chrono::seconds(3600);
  EXPECT_EQ(decide_alert(e, kOk, 1000, p), alert_action::none);
  EXPECT_EQ(decide_alert(e, kCritical, 1100, p), alert_action::fire);
  EXPECT_EQ(decide_alert(e, kCritical, 1200, p), alert_action::none) << "no second alert while it stays failing";
  EXPECT_EQ(decide_alert(e, kWarning, 2000, p), alert_action::none);
  EXPECT_EQ(decide_alert(e, kCritical, 4700, p), alert_action::repeat) << "after the repeat interval";
  EXPECT_EQ(decide_alert(e, kOk, 4800, p), alert_action::resolve);
  EXPECT_EQ(decide_alert(e, kOk, 4900, p), alert_action::none) << "one RESOLVED only";
}

TEST(AlertPolicy, FlapGuardWaitsForConsecutiveFailures) {
  alert_entry e;
  alert_policy p;
  p.flap_guard = 3;
  EXPECT_EQ(decide_alert(e, kCritical, 1, p), alert_action::none);
  EXPECT_EQ(decide_alert(e, kCritical, 2, p), alert_action::none);
  EXPECT_EQ(decide_alert(e, kOk, 3, p), alert_action::none) << "a blip that cleared sends nothing";
  EXPECT_EQ(decide_alert(e, kCritical, 4, p), alert_action::none);
  EXPECT_EQ(decide_alert(e, kCritical, 5, p), alert_action::none);
  EXPECT_EQ(decide_alert(e, kCritical, 6, p), alert_action::fire);
}

TEST(AlertStore, SurvivesARestartAndADamagedFile) {
  temp_dir t;
  {
    alert_store s(t / "state");
    s.entry("fs", "/scratch").firing = true;
    s.save();
  }
  {
    alert_store s(t / "state");
    EXPECT_TRUE(s.entry("fs", "/scratch").firing);
    EXPECT_FALSE(s.entry("fs", "/other").firing);
  }
  t.write("state/alerts.json", "{not json");
  alert_store s(t / "state");
  EXPECT_FALSE(s.entry("fs", "/scratch").firing);
}

// `trainwatch bad-nodes` became `job-on-bad-node`: an alert open under the old name stays
// open under the new one (no second alert, no RESOLVED for the rename).
TEST(AlertStore, AnAlertOpenUnderAChecksOldNameStaysOpenUnderItsNewName) {
  temp_dir t;
  {
    alert_store s(t / "state");
    s.entry("bad-nodes", "train").firing = true;
    s.entry("bad-nodes", "eval").failures = 2;
    s.entry("job-on-bad-node", "eval").failures = 5;
    s.save();
  }
  alert_store s(t / "state");
  EXPECT_TRUE(s.entry("job-on-bad-node", "train").firing);
  EXPECT_EQ(s.entry("job-on-bad-node", "eval").failures, 5) << "the new name's own entry wins";
  s.save();
  std::ifstream in(t / "state/alerts.json");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.find("bad-nodes"), std::string::npos) << text;
}

TEST(Sinks, ParseAndRedact) {
  auto m = parse_sink(
      "smtp://alice:s3cret@mail.example.org:587?from=ml%40example.org&to=a@x.org&to=b@x.org&starttls=required");
  EXPECT_EQ(m.type, sink::kind::smtp);
  EXPECT_EQ(m.url, "smtp://mail.example.org:587");
  EXPECT_EQ(m.user, "alice");
  EXPECT_EQ(m.password, "s3cret");
  EXPECT_EQ(m.from, "ml@example.org");
  EXPECT_EQ(m.to.size(), 2u);
  EXPECT_TRUE(m.starttls);
  EXPECT_EQ(m.redacted().find("s3cret"), std::string::npos);
  auto s = parse_sink("slack:https://hooks.slack.com/services/T000/B000/XXXXSECRET");
  EXPECT_EQ(s.redacted().find("SECRET"), std::string::npos);
  auto w = parse_sink("webhook:https://user:pw@hooks.example.org/path?token=abc");
  EXPECT_EQ(w.redacted(), "webhook https://hooks.example.org");
  EXPECT_EQ(parse_sink("sendmail:ops@example.org").to[0], "ops@example.org");
  for (const char* bad : {"smtp://host?to=a@b", "smtp://host?from=a@b", "smtp://?from=a@b&to=c@d", "ftp://x",
                          "slack:hooks.slack.com/x", "sendmail:nobody", "smtp://h?from=a@b&to=c@d&starttls=maybe",
                          "smtps://h?from=a@b&to=c@d&starttls=required", "smtp://h?from=a@b&to=c@d&bogus=1"}) {
    try {
      parse_sink(bad);
      ADD_FAILURE() << bad;
    } catch (const parse_error& e) {
      EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos);
    }
  }
}

TEST(Sinks, MailHasTheHeadersAndNoInjectedOnes) {
  auto s = parse_sink("smtp://127.0.0.1:2525?from=tw@example.org&to=ops@example.org");
  alert_message m;
  m.check = "fs";
  m.target = "/scratch\r\nBcc: evil@example.org";
  m.state = "FIRING";
  m.status = kCritical;
  m.text = "full";
  m.host = "n1";
  m.time = 1795332154;
  const std::string text = mail_text(s, m);
  for (const char* h : {"Date: ", "From: trainwatch <tw@example.org>", "To: ops@example.org",
                        "Subject: [trainwatch FIRING] fs", "Message-ID: <", "Content-Type: text/plain"})
    EXPECT_NE(("\r\n" + text).find(std::string("\r\n") + h), std::string::npos) << h;
  const std::string headers = text.substr(0, text.find("\r\n\r\n"));
  EXPECT_EQ(headers.find("\r\nBcc:"), std::string::npos) << "a target cannot add a header";
  auto back = alert_message::from_json(m.json());
  EXPECT_EQ(back.target, m.target);
  EXPECT_EQ(back.status, kCritical);
}

TEST(FsCheck, QuotaOutput) {
  auto q = parse_quota_output(
      "Disk quotas for usr me (uid 1000):\n"
      "     /scratch  1048576*  1000000 2000000       -   12345  0  50000       -\n");
  ASSERT_TRUE(q);
  EXPECT_EQ(q->used, 1048576ull * 1024);
  EXPECT_EQ(q->limit, 2000000ull * 1024);
  EXPECT_EQ(q->files_limit, 50000u);
  EXPECT_FALSE(parse_quota_output("garbage\n"));
}

TEST(FsCheck, Runway) {
  std::vector<std::pair<double, double>> h{{0, 100}, {600, 200}, {1200, 300}};
  auto r = runway_seconds(h, 1300);
  ASSERT_TRUE(r);
  EXPECT_NEAR(*r, 6000, 1);
  EXPECT_FALSE(runway_seconds({{0, 300}, {600, 200}, {1200, 100}}, 1000)) << "shrinking: no runway";
  EXPECT_FALSE(runway_seconds({{0, 1}}, 10));
}

// The history keeps the last day, at most 500 points, in a file whose size stops
// growing there: what a run reads and writes does not grow with how long it has run.
TEST(History, KeepsTheLastDayAndAtMost500PointsInAFileOfBoundedSize) {
  temp_dir t;
  const std::string f = history_file(t.path(), "fs", "/scratch/a b");
  EXPECT_EQ(f, t / "fs-history-_scratch_a_b");
  std::vector<std::pair<double, double>> pts;
  for (int i = 0; i < 700; ++i) pts = record_history(f, 1e6 + 60.0 * i, 1000.0 + i);
  ASSERT_EQ(pts.size(), 500u);
  EXPECT_EQ(pts.front().first, 1e6 + 60.0 * 200) << "the oldest points go first";
  EXPECT_EQ(pts.back().second, 1699.0);
  struct stat st {};
  ASSERT_EQ(stat(f.c_str(), &st), 0);
  EXPECT_LE(st.st_size, 8 + 500 * 16);
  // A day later only the new point is left.
  pts = record_history(f, 1e6 + 60.0 * 699 + 86400, 5);
  ASSERT_EQ(pts.size(), 1u);
  EXPECT_EQ(pts[0].second, 5);
}

TEST(History, ReadsTheOldTextFormatOnceAndWritesTheNewOne) {
  temp_dir t;
  t.write("memory-history-x", "1000 300000\n1600 500000\n");
  auto pts = record_history(t / "memory-history-x", 2200, 700000);
  ASSERT_EQ(pts.size(), 3u);
  EXPECT_EQ(pts[0], std::make_pair(1000.0, 300000.0));
  EXPECT_EQ(pts[1], std::make_pair(1600.0, 500000.0));
  pts = record_history(t / "memory-history-x", 2800, 900000);
  ASSERT_EQ(pts.size(), 4u) << "the converted file reads back";
  EXPECT_EQ(pts[2], std::make_pair(2200.0, 700000.0));
}

TEST(History, FollowsNoLinkAndWaitsOnNoFifo) {
  temp_dir t;
  t.write("elsewhere", "1000 1\n1001 2\n");
  ASSERT_EQ(symlink((t / "elsewhere").c_str(), (t / "fs-history-l").c_str()), 0);
  EXPECT_EQ(record_history(t / "fs-history-l", 1002, 3).size(), 1u) << "the link's target is not read";
  ASSERT_EQ(mkfifo((t / "fs-history-f").c_str(), 0600), 0);
  EXPECT_EQ(record_history(t / "fs-history-f", 1002, 3).size(), 1u) << "a FIFO gives nothing and blocks nothing";
}

TEST(FsCheck, ThresholdsAndEffectiveCapacity) {
  temp_dir t;
  fs_target ft;
  ft.path = t.path();
  ft.min_free = parse_threshold("1P");  // no test machine has a petabyte free
  auto r = check_fs({ft}, "");
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].status, kCritical);
  ft.min_free = parse_threshold("1K");
  ft.capacity = 0.0001;  // 0.01% of the disk is "full": nothing is free
  EXPECT_EQ(check_fs({ft}, "")[0].status, kCritical);
  ft.capacity = 1;
  EXPECT_EQ(check_fs({ft}, "")[0].status, kOk);
  ft.path = t / "missing";
  EXPECT_EQ(check_fs({ft}, "")[0].status, kUnknown);
}

TEST(JobRunning, SqueueRowsAndPendingReasons) {
  auto rows = parse_squeue("12|RUNNING|None|train llama|v2\n13_[2-10%1]|PENDING|JobArrayTaskLimit|train\nbad line\n");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "train llama|v2");
  EXPECT_EQ(explain_pending(rows[1].reason), "held by the array's task limit (%N)");
  EXPECT_EQ(explain_pending("Dependency"), "waiting for a dependency");
}

TEST(LogStall, SaveMarkerGivesALongerLimit) {
  temp_dir t;
  t.write("rank0.log", "x");
  struct timespec old[2] = {{time(nullptr) - 600, 0}, {time(nullptr) - 600, 0}};
  utimensat(AT_FDCWD, (t / "rank0.log").c_str(), old, 0);
  log_stall_options o;
  o.patterns = {t / "rank*.log"};
  o.max_age = std::chrono::minutes(5);
  EXPECT_EQ(check_log_stall(o).status, kCritical);
  o.save_marker = t / "SAVING";
  t.write("SAVING", "");
  EXPECT_EQ(check_log_stall(o).status, kOk);
  o.patterns = {t / "none*.log"};
  EXPECT_EQ(check_log_stall(o).status, kUnknown);
}

TEST(Memory, CgroupFixtureAndLeakTrend) {
  temp_dir t;
  t.write("proc/self/cgroup", "0::/job\n");
  t.write("proc/self/mountinfo", "30 25 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  t.write("proc/meminfo", "MemTotal: 100000000 kB\nMemAvailable: 90000000 kB\n");
  t.write("sys/fs/cgroup/job/memory.max", "1000000\n");
  t.write("sys/fs/cgroup/job/memory.current", "960000\n");
  memory_options o;
  o.root = t.path();
  o.min_available = parse_threshold("5%");
  o.warn_available = parse_threshold("10%");
  auto r = check_memory(o, "");
  EXPECT_EQ(r.status, kCritical) << r.text;
  t.write("sys/fs/cgroup/job/memory.current", "920000\n");
  EXPECT_EQ(check_memory(o, "").status, kWarning);
  t.write("sys/fs/cgroup/job/memory.current", "700000\n");  // 30% left: fine by the thresholds
  // A growing history in the state directory: at 200 kB an hour the limit is 1.5 h away.
  t.write("state/memory-history-cgroup_v2__job",
          std::to_string(time(nullptr) - 7200) + " 300000\n" + std::to_string(time(nullptr) - 3600) + " 500000\n");
  auto leak = check_memory(o, t / "state");
  EXPECT_EQ(leak.status, kWarning) << leak.text;
  EXPECT_NE(leak.text.find("limit is reached in"), std::string::npos);
}

// --job: each node's helper line judged as that node's reading of the training job; a
// line that names no one node, or holds no numbers, is no reading; a node missing is
// UNKNOWN, never OK.
TEST(Memory, AJobsNodesAreJudgedEachFromTheHelpersLines) {
  temp_dir t;
  memory_options o;
  o.min_available = parse_threshold("5%");
  o.warn_available = parse_threshold("10%");
  const std::string lines =
      "n1 500 1000 cgroup v1 /slurm_n1/uid_1000/job_77/step_0\n"
      "n2 960 1000 cgroup v1 /slurm_n2/uid_1000/job_77/step_0\n"
      "n[1-3] 1 1000 node\n"
      "$(reboot) 1 1000 node\n"
      "n3 x 1000 node\n";
  auto rs = judge_job_memory("train", "77", 2, lines, o, t / "state");
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0].target, "train on n1");
  EXPECT_EQ(rs[0].status, kOk) << rs[0].text;
  EXPECT_EQ(rs[1].target, "train on n2");
  EXPECT_EQ(rs[1].status, kCritical) << rs[1].text;
  EXPECT_NE(rs[1].text.find("train on n2 (job 77): 40B available of 1000B (96.0% used) in cgroup v1 /slurm_n2"),
            std::string::npos)
      << rs[1].text;
  rs = judge_job_memory("train", "77", 3, "n1 500 1000 node\n", o, t / "state");
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[1].status, kUnknown);
  EXPECT_EQ(rs[1].text, "job 77: no reading from 2 of its 3 nodes");
  memory_reading m;
  m.used = 1, m.limit = 2, m.source = "node";
  const std::string here = memory_here_line(m);
  EXPECT_EQ(here.substr(here.find(' ')), " 1 2 node\n");
}

TEST(Textfile, PrometheusFormat) {
  check_result r;
  r.check = "job-running";
  r.target = "my \"job\"";
  r.status = kCritical;
  r.figures = {{"running", 0}};
  const std::string t = textfile_text({r});
  EXPECT_NE(t.find("trainwatch_status{check=\"job-running\",target=\"my \\\"job\\\"\"} 2"), std::string::npos) << t;
  EXPECT_NE(t.find("trainwatch_job_running_running{target="), std::string::npos) << t;
}

namespace {
std::string parse_error_of(const std::string& spec) {
  try {
    parse_sink(spec);
  } catch (const parse_error& e) {
    return e.what();
  }
  return "";
}
int count_files(const std::string& dir) {
  int n = 0;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}
}  // namespace

// AUTH PLAIN over smtp:// sent the password in clear.
TEST(SinkSafety, CredentialsNeedTls) {
  EXPECT_NE(parse_error_of("smtp://alice:pw@mail.example.org?from=a@b.c&to=d@e.f").find("need TLS"), std::string::npos);
  EXPECT_NE(parse_error_of("smtp://alice@mail.example.org?from=a@b.c&to=d@e.f").find("need TLS"), std::string::npos);
  EXPECT_EQ(parse_error_of("smtps://alice:pw@mail.example.org?from=a@b.c&to=d@e.f"), "");
  EXPECT_EQ(parse_error_of("smtp://alice:pw@mail.example.org?from=a@b.c&to=d@e.f&starttls=required"), "");
  EXPECT_EQ(parse_error_of("smtp://mail.example.org?from=a@b.c&to=d@e.f"), "") << "no credentials, no TLS needed";
}

// TRAINWATCH_SMTP_PASSWORD went to whatever host a spec named.
TEST(SinkSafety, ThePasswordVariableIsForOneHost) {
  scoped_env pw("TRAINWATCH_SMTP_PASSWORD", "s3cret");
  EXPECT_NE(parse_error_of("smtps://alice@evil.example.net?from=a@b.c&to=d@e.f").find("TRAINWATCH_SMTP_HOST"),
            std::string::npos);
  scoped_env host("TRAINWATCH_SMTP_HOST", "mail.example.org");
  EXPECT_EQ(parse_sink("smtps://alice@mail.example.org:465?from=a@b.c&to=d@e.f").password, "s3cret");
  const std::string why = parse_error_of("smtps://alice@evil.example.net?from=a@b.c&to=d@e.f");
  EXPECT_NE(why.find("only for the host"), std::string::npos) << why;
  EXPECT_EQ(why.find("s3cret"), std::string::npos);
}

TEST(SinkSafety, WhatHoldsASecretAndTheEnvironmentForm) {
  EXPECT_TRUE(parse_sink("slack:https://hooks.slack.com/services/T/B/X").secret_in_spec);
  EXPECT_TRUE(parse_sink("webhook:http://127.0.0.1:9/h").secret_in_spec);
  EXPECT_TRUE(parse_sink("smtps://a:pw@h?from=a@b.c&to=d@e.f").secret_in_spec);
  EXPECT_FALSE(parse_sink("smtp://h?from=a@b.c&to=d@e.f").secret_in_spec);
  EXPECT_FALSE(parse_sink("sendmail:ops@example.org").secret_in_spec);
  scoped_env url("MY_SLACK", "https://hooks.slack.com/services/T/B/X");
  const sink s = parse_sink("slack:env:MY_SLACK");
  EXPECT_FALSE(s.secret_in_spec);
  EXPECT_EQ(s.url, "https://hooks.slack.com/services/T/B/X");
  EXPECT_NE(parse_error_of("webhook:env:NOT_SET_ANYWHERE").find("'NOT_SET_ANYWHERE' is not set"), std::string::npos);
}

// A webhook URL with a query and no path was logged with its token; a sink with no
// ':' was echoed whole.
TEST(SinkSafety, RedactionHasNoTokenAnywhere) {
  EXPECT_EQ(parse_sink("webhook:https://hooks.example.org?token=abc").redacted(), "webhook https://hooks.example.org");
  EXPECT_EQ(parse_sink("webhook:https://hooks.example.org#abc").redacted(), "webhook https://hooks.example.org");
  const std::string why = parse_error_of("xoxb-1234-SECRETTOKEN");
  EXPECT_EQ(why.find("SECRETTOKEN"), std::string::npos) << why;
  EXPECT_NE(why.find("no known scheme"), std::string::npos) << why;
}

TEST(SinkSafety, TheIdNamesTheSinkNotItsPassword) {
  const sink a = parse_sink("smtps://u:one@h?from=a@b.c&to=d@e.f");
  const sink b = parse_sink("smtps://u:two@h?from=a@b.c&to=d@e.f");
  const sink c = parse_sink("smtps://u:one@other?from=a@b.c&to=d@e.f");
  EXPECT_EQ(a.id(), b.id());
  EXPECT_NE(a.id(), c.id());
}

// mallory made the state directory 0777 and planted files in it.
TEST(StateDirSafety, AnotherUsersOrAnOpenDirectoryIsRefused) {
  temp_dir t;
  ASSERT_EQ(mkdir((t / "open").c_str(), 0777), 0);
  ASSERT_EQ(chmod((t / "open").c_str(), 0777), 0);
  try {
    ensure_state_dir(t / "open");
    ADD_FAILURE() << "a 0777 directory was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("can be written by group or others (mode 0777)"), std::string::npos);
  }
  if (getuid() == 0) {
    ASSERT_EQ(mkdir((t / "hers").c_str(), 0700), 0);
    ASSERT_EQ(chown((t / "hers").c_str(), 65534, 65534), 0);
    EXPECT_THROW(ensure_state_dir(t / "hers"), std::runtime_error);
  }
  EXPECT_NO_THROW(ensure_state_dir(t / "new/state"));
}

// Planted *.tmp.* symlinks made a run overwrite the user's own files.
TEST(StateDirSafety, APlantedTemporarySymlinkIsNotFollowed) {
  temp_dir t;
  t.write("victim", "precious");
  const std::string tmp = t / ("alerts.json.tmp." + host_name() + "." + std::to_string(getpid()));
  ASSERT_EQ(symlink((t / "victim").c_str(), tmp.c_str()), 0);
  write_atomically(t / "alerts.json", "{}\n");
  std::ifstream in(t / "victim");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "precious");
}

namespace {
alert_setup setup_in(const temp_dir& t) {
  alert_setup s;
  s.state_dir = t / "state";
  s.delivery.tries = 1;
  s.delivery.timeout = 1s;
  s.delivery.backoff = 10ms;
  return s;
}
check_result critical(const std::string& target) {
  check_result r;
  r.check = "fs";
  r.target = target;
  r.status = kCritical;
  r.text = target + " is full";
  return r;
}
}  // namespace

// A spooled alert named its sink by URL: mallory's planted item went to her server
// (with the SMTP password). Now only configured sinks are used, by reference.
TEST(SpoolSafety, ASpooledItemGoesOnlyToAConfiguredSink) {
  temp_dir t;
  alert_setup s = setup_in(t);
  ensure_state_dir(s.state_dir + "/spool");
  t.write("state/spool/1-planted.json",
          R"({"sink":"webhook:http://127.0.0.1:9/mallory","message":{"check":"fs","target":"x","state":"FIRING",)"
          R"("status":"CRITICAL","text":"t","host":"h","time":1},"tries":0})");
  EXPECT_EQ(flush_spool(s), 1) << "kept: no configured sink matches";
  EXPECT_EQ(count_files(s.state_dir + "/spool"), 1);
}

// With no sink the alert was still marked sent, and stayed suppressed for 4 h.
TEST(SpoolSafety, WithNoSinkNothingIsMarkedSent) {
  temp_dir t;
  alert_setup s = setup_in(t);
  handle_results({critical("/scratch")}, s);
  s.sinks.push_back(parse_sink("webhook:http://127.0.0.1:9/down"));
  handle_results({critical("/scratch")}, s);
  EXPECT_EQ(count_files(s.state_dir + "/spool"), 1) << "the second run, with a sink, fires";
}

// One byte that is not UTF-8 in a path stopped all alerting and grew the spool.
TEST(SpoolSafety, AnyBytesInATargetAreAlerted) {
  temp_dir t;
  alert_setup s = setup_in(t);
  s.sinks.push_back(parse_sink("webhook:http://127.0.0.1:9/down"));
  EXPECT_NO_THROW(handle_results({critical("/home/caf\xe9"), critical("/scratch")}, s));
  EXPECT_EQ(count_files(s.state_dir + "/spool"), 2);
  EXPECT_NO_THROW(handle_results({critical("/home/caf\xe9"), critical("/scratch")}, s));
  EXPECT_EQ(count_files(s.state_dir + "/spool"), 2) << "the second run repeats nothing: the key is stable";
  EXPECT_EQ(json_safe("caf\xe9"), "caf\\xE9");
  EXPECT_EQ(json_safe("caf\xc3\xa9 \xf0\x9f\x9a\x80"), "caf\xc3\xa9 \xf0\x9f\x9a\x80");
  EXPECT_EQ(json_safe("\xed\xa0\x80\xc0\xaf"), "\\xED\\xA0\\x80\\xC0\\xAF");
}

// Retrying an old spool had no budget: an unrelated OK check took 67 s.
TEST(SpoolSafety, ADeadSinkIsTriedOncePerRunAndTheBudgetHolds) {
  temp_dir t;
  alert_setup s = setup_in(t);
  s.sinks.push_back(parse_sink("webhook:http://127.0.0.1:9/down"));
  std::vector<check_result> many;
  for (int i = 0; i < 20; ++i) many.push_back(critical("/p" + std::to_string(i)));
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(handle_results(many, s), 20);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s) << "one try for the sink, not 20";
  s.delivery.budget = 0s;
  EXPECT_EQ(flush_spool(s), 20);
}

// One mapping of status names, for `notify --status` and spooled alerts alike.
TEST(Status, OneNameMappingInAnyCase) {
  for (int s : {kOk, kWarning, kCritical, kUnknown}) {
    EXPECT_EQ(parse_status(status_name(s)), s);
    std::string lower = status_name(s);
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(parse_status(lower), s);
  }
  EXPECT_EQ(parse_status("fine"), -1);
  EXPECT_THROW(alert_message::from_json(R"({"check":"c","target":"t","state":"FIRING","status":"SO-SO",)"
                                        R"("text":"x","host":"h","time":1})"),
               parse_error);
}

TEST(SlowNodes, ARecentReportIsAWarningNamingHostAndRankAnOldOneIsOver) {
  trainctl_test::temp_dir t;
  const std::string path = t / "slow_nodes";
  std::ofstream(path) << "1000 host=n2 rank=2 job=7 step=50 step_ms=150.0 fastest_ms=50.0 factor=3.00 gpus=-\n"
                         "junk\n";
  const check_result r = check_slow_nodes(path, std::chrono::hours(1), 1060);
  EXPECT_EQ(r.status, kWarning);
  EXPECT_NE(r.text.find("n2 rank 2 x3.00 (job 7, 60 s ago)"), std::string::npos) << r.text;
  EXPECT_EQ(check_slow_nodes(path, std::chrono::hours(1), 1000 + 7200).status, kOk);
  EXPECT_EQ(check_slow_nodes(t / "none", std::chrono::hours(1), 1000).status, kOk) << "no file: nobody was slow";
}

// The log directory is often group-writable: what a teammate or another user put there
// under the name is not read, never stops the check (cron would pile up hung runs) and
// never pins it: the user's own stragglers come from the bad-node memory instead, where
// the supervisors remember every one (and they never append to such a file).
TEST(SlowNodes, AFifoALinkOrAnotherUsersFileIsSkippedForTheBadNodeMemory) {
  trainctl_test::temp_dir t;
  const std::string memory = t / "bad_nodes";
  bad_node slow;
  slow.when = 1000;
  slow.host = "n3";
  slow.job = "8";
  slow.reason = "slow (rank 1, x2.50 the fastest rank's step time)";
  ASSERT_EQ(record_bad_node(memory, slow), "");
  bad_node crash = slow;
  crash.host = "n4";
  crash.reason = "crashed (SIGSEGV in rank 0, the first death of the job)";
  ASSERT_EQ(record_bad_node(memory, crash), "");
  const std::string fifo = t / "fifo/slow_nodes";
  ASSERT_EQ(mkdir((t / "fifo").c_str(), 0700), 0);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const check_result f = check_slow_nodes(fifo, std::chrono::hours(1), 1060, memory);
  EXPECT_EQ(f.status, kWarning) << f.text;
  EXPECT_EQ(f.text, fifo +
                        " is not a regular file of this user (skipped); from your bad-node memory, 1 straggler "
                        "report: n3 rank 1 x2.50 (job 8, 60 s ago)");
  EXPECT_EQ(check_slow_nodes(fifo, std::chrono::hours(1), 1000 + 7200, memory).status, kOk) << "an old one is over";
  const std::string link = t / "slow_nodes_link";
  ASSERT_EQ(symlink("/dev/zero", link.c_str()), 0);
  const check_result l = check_slow_nodes(link, std::chrono::hours(1), 1060, memory);
  EXPECT_EQ(l.status, kWarning) << "never read through a link (to /dev/zero: without bound)";
  if (getuid() == 0) {  // another user's file: root can make one
    const std::string theirs = t / "slow_nodes";
    t.write("slow_nodes", "1050 host=n9 rank=0 job=99 step=5 step_ms=90.0 fastest_ms=30.0 factor=3.00 gpus=-\n");
    ASSERT_EQ(chown(theirs.c_str(), 65534, 65534), 0);
    const check_result o = check_slow_nodes(theirs, std::chrono::hours(1), 1060, memory);
    EXPECT_EQ(o.status, kWarning);
    EXPECT_EQ(o.text.find("n9"), std::string::npos) << "their line is not read: " << o.text;
    EXPECT_NE(o.text.find("n3 rank 1"), std::string::npos) << o.text;
  }
}

TEST(BadNodeBack, AJobOnARememberedNodeIsAWarning) {
  trainctl_test::temp_dir t;
  bad_node b;
  b.when = 1000;
  b.host = "n2";
  b.job = "7";
  b.reason = "crashed";
  ASSERT_EQ(record_bad_node(t / "bad", b), "");
  const auto r = check_bad_node_back("train", {"n1", "n2"}, t / "bad", std::chrono::hours(24), 1100);
  EXPECT_EQ(r.status, kWarning);
  EXPECT_NE(r.text.find("n2 (crashed, 100 s ago)"), std::string::npos) << r.text;
  EXPECT_EQ(check_bad_node_back("train", {"n1", "n3"}, t / "bad", std::chrono::hours(24), 1100).status, kOk);
  EXPECT_EQ(check_bad_node_back("train", {"n2"}, t / "bad", std::chrono::hours(24), 1000 + 90000).status, kOk);
}

// job-running's CRITICAL line names how the newest job of that name ended, and the
// no-progress breaker by its exit status.
TEST(JobRunning, TheLastEndedJobIsNamedAndTheBreakersExitExplained) {
  EXPECT_EQ(last_ended_clause(""), "");
  EXPECT_EQ(last_ended_clause("12|COMPLETED|0:0|2026-11-27T05:00:00\n13|RUNNING|0:0|Unknown\n"),
            "; the last one, 12, ended COMPLETED at 2026-11-27T05:00:00");
  const std::string c = last_ended_clause(
      "20_1|FAILED|1:0|2026-11-27T05:01:00\n20_4|FAILED|93:0|2026-11-27T05:03:00\n20_3|FAILED|1:0|2026-11-27T05:02:00\n"
      "20_[5-6]|CANCELLED by 0|0:0|2026-11-27T05:03:00\n");
  EXPECT_EQ(c.substr(0, 70), "; the last one, 20_4, ended FAILED at 2026-11-27T05:03:00 with exit st");
  EXPECT_NE(c.find("no-progress breaker"), std::string::npos) << c;
  EXPECT_NE(c.find("trainctl report 20)"), std::string::npos) << c;
}
