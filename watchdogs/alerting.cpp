#include "alerting.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <stdexcept>

#include "parse.hpp"

namespace trainctl {
namespace {

std::string spool_dir(const alert_setup& s) { return s.state_dir + "/spool"; }

// How to name an item's sink in a log line: never a spec an older version spooled.
std::string spooled_sink_name(const nlohmann::json& item) {
  if (item.contains("sink_id")) return json_safe(item.value("sink", std::string("?")));
  try {
    return parse_sink(item.at("sink").get<std::string>()).redacted();
  } catch (const std::exception&) {
    return "a sink that cannot be read";
  }
}

// The configured sink a spool item names; an item of an older trainctl names its sink
// by its spec, which is parsed only to find which configured sink it was.
const sink* configured_sink(const alert_setup& setup, const nlohmann::json& item) {
  std::string id = item.value("sink_id", std::string());
  if (id.empty()) {
    try {
      id = parse_sink(item.at("sink").get<std::string>()).id();
    } catch (const std::exception&) {
      return nullptr;
    }
  }
  for (const auto& k : setup.sinks)
    if (k.id() == id) return &k;
  return nullptr;
}

void spool(const alert_setup& s, const sink& k, const alert_message& m) {
  static std::mt19937_64 rng{std::random_device{}()};
  char name[96];
  std::snprintf(name, sizeof name, "/%lld-%016llx.json", static_cast<long long>(m.time),
                static_cast<unsigned long long>(rng()));
  // The sink by reference: flush sends only to a sink configured at that time, never to
  // an address read back from the spool (which holds no secret either).
  const nlohmann::json j = {
      {"sink_id", k.id()}, {"sink", k.redacted()}, {"message", nlohmann::json::parse(m.json())}, {"tries", 0}};
  write_atomically(spool_dir(s) + name, j.dump() + "\n");
}

std::string prom_escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

std::string textfile_text(const std::vector<check_result>& results) {
  std::ostringstream out;
  out << "# HELP trainwatch_status Check status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.\n"
         "# TYPE trainwatch_status gauge\n";
  for (const auto& r : results)
    out << "trainwatch_status{check=\"" << prom_escape(json_safe(r.check)) << "\",target=\""
        << prom_escape(json_safe(r.target)) << "\"} " << r.status << "\n";
  for (const auto& r : results)
    for (const auto& [k, v] : r.figures) {
      std::string metric = "trainwatch_" + r.check + "_" + k;
      std::replace(metric.begin(), metric.end(), '-', '_');
      out << metric << "{target=\"" << prom_escape(json_safe(r.target)) << "\"} " << v << "\n";
    }
  return out.str();
}

void check_state_dirs(const alert_setup& setup) {
  ensure_state_dir(setup.state_dir);
  ensure_state_dir(spool_dir(setup));
  if (!setup.textfile.empty()) {
    const size_t slash = setup.textfile.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : setup.textfile.substr(0, std::max<size_t>(slash, 1));
    const std::string why = untrusted_dir(dir);
    if (!why.empty()) throw std::runtime_error("--textfile directory " + dir + " " + why + ": refusing it");
  }
}

int handle_results(const std::vector<check_result>& results, const alert_setup& setup) {
  check_state_dirs(setup);
  {
    alert_store store(setup.state_dir);
    const std::int64_t now = static_cast<std::int64_t>(time(nullptr));
    for (const auto& r : results) {
      alert_entry& e = store.entry(r.check, r.target);
      const alert_entry before = e;
      const alert_action a = decide_alert(e, r.status, now, setup.policy);
      if (a == alert_action::none) continue;
      if (setup.sinks.empty()) {
        // Nothing took the alert: it is not sent, so a later run with a sink sends it.
        e.firing = before.firing;
        e.last_sent = before.last_sent;
        e.sent_status = before.sent_status;
        continue;
      }
      alert_message m;
      m.check = json_safe(r.check);
      m.target = json_safe(r.target);
      m.state = a == alert_action::resolve ? "RESOLVED" : a == alert_action::repeat ? "REPEAT" : "FIRING";
      m.status = r.status;
      m.text = json_safe(r.text);
      m.host = json_safe(host_name());
      m.time = now;
      m.since = a == alert_action::resolve ? before.since : e.since;
      // Kept while repeated: one not repeated within two repeats (an hour at least: cron
      // runs the checks minutes apart) is stale.
      if (a != alert_action::resolve) m.expires = now + std::max<std::int64_t>(2 * setup.policy.repeat.count(), 3600);
      if (a != alert_action::fire) m.previous = before.sent_status;
      m.figures = r.figures;
      m.labels = r.labels;
      for (const auto& k : setup.sinks) spool(setup, k, m);
    }
    store.save();  // the decision and the spooled alerts are both on disk before any sending
  }
  if (!setup.textfile.empty()) {
    try {
      write_atomically(setup.textfile, textfile_text(results), 0644);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trainwatch: --textfile: %s\n", e.what());
    }
  }
  return flush_spool(setup);
}

int flush_spool(const alert_setup& setup) {
  const std::string dir = spool_dir(setup);
  std::vector<std::string> files;
  if (DIR* d = opendir(dir.c_str())) {
    const std::time_t now = time(nullptr);
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() > 5 && n.compare(n.size() - 5, 5, ".json") == 0) {
        files.push_back(n);
        continue;
      }
      // A claim left by a run that died while sending: after 10 minutes it is
      // put back, so the alert is sent by this run (at least once).
      const size_t claim = n.find(".json.sending.");
      struct stat st {};
      if (claim != std::string::npos && stat((dir + "/" + n).c_str(), &st) == 0 && now - st.st_mtime > 600) {
        const std::string back = n.substr(0, claim + 5);
        if (rename((dir + "/" + n).c_str(), (dir + "/" + back).c_str()) == 0) files.push_back(back);
      }
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());  // oldest first
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::string> down;  // sinks that failed in this run: the rest waits for the next
  int left = 0;
  bool budget_spent = false;
  for (const auto& n : files) {
    const std::string path = dir + "/" + n;
    if (!budget_spent && std::chrono::steady_clock::now() - started >= setup.delivery.budget) {
      budget_spent = true;
      std::fprintf(stderr, "trainwatch: spent %s on delivery in this run; the rest waits for the next\n",
                   format_duration(setup.delivery.budget).c_str());
    }
    if (budget_spent) {
      ++left;
      continue;
    }
    // Claim the item so that a concurrent run does not send it too.
    const std::string claimed = path + ".sending." + host_name() + "." + std::to_string(getpid());
    if (rename(path.c_str(), claimed.c_str()) != 0) continue;
    ++left;  // until a sink takes it
    try {
      std::ifstream in(claimed);
      nlohmann::json j = nlohmann::json::parse(in);
      const alert_message m = alert_message::from_json(j.at("message").dump());
      const sink* k = configured_sink(setup, j);
      if (k == nullptr) {
        std::fprintf(stderr, "trainwatch: spooled alert %s is for a sink not configured now (%s); kept until it is\n",
                     n.c_str(), spooled_sink_name(j).c_str());
      } else if (std::find(down.begin(), down.end(), k->id()) == down.end()) {
        std::string error;
        if (deliver(*k, m, setup.delivery, &error)) {
          unlink(claimed.c_str());
          std::fprintf(stderr, "trainwatch: sent %s %s %s to %s\n", m.state.c_str(), m.check.c_str(), m.target.c_str(),
                       k->redacted().c_str());
          --left;
          continue;
        }
        down.push_back(k->id());
        j["tries"] = j.value("tries", 0) + 1;
        write_atomically(claimed, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
        std::fprintf(stderr, "trainwatch: could not send %s %s to %s (%s); kept in %s for the next run\n",
                     m.state.c_str(), m.check.c_str(), k->redacted().c_str(), error.c_str(), dir.c_str());
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trainwatch: spooled alert %s is unreadable (%s); left as %s.bad\n", n.c_str(), e.what(),
                   path.c_str());
      rename(claimed.c_str(), (path + ".bad").c_str());
      continue;
    }
    rename(claimed.c_str(), path.c_str());
  }
  return left;
}

}  // namespace trainctl
