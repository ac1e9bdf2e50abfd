#include "alerting.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

namespace trainctl {
namespace {

std::string spool_dir(const alert_setup& s) { return s.state_dir + "/spool"; }

void spool(const alert_setup& s, const sink& k, const alert_message& m) {
  static std::mt19937_64 rng{std::random_device{}()};
  char name[96];
  std::snprintf(name, sizeof name, "/%lld-%016llx.json", static_cast<long long>(m.time),
                static_cast<unsigned long long>(rng()));
  const nlohmann::json j = {{"sink", k.spec}, {"message", nlohmann::json::parse(m.json())}, {"tries", 0}};
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
    out << "trainwatch_status{check=\"" << prom_escape(r.check) << "\",target=\"" << prom_escape(r.target) << "\"} "
        << r.status << "\n";
  for (const auto& r : results)
    for (const auto& [k, v] : r.figures) {
      std::string metric = "trainwatch_" + r.check + "_" + k;
      std::replace(metric.begin(), metric.end(), '-', '_');
      out << metric << "{target=\"" << prom_escape(r.target) << "\"} " << v << "\n";
    }
  return out.str();
}

int handle_results(const std::vector<check_result>& results, const alert_setup& setup) {
  ensure_state_dir(setup.state_dir);
  ensure_state_dir(spool_dir(setup));
  {
    alert_store store(setup.state_dir);
    const std::int64_t now = static_cast<std::int64_t>(time(nullptr));
    for (const auto& r : results) {
      alert_entry& e = store.entry(r.check, r.target);
      const alert_action a = decide_alert(e, r.status, now, setup.policy);
      if (a == alert_action::none || setup.sinks.empty()) continue;
      alert_message m;
      m.check = r.check;
      m.target = r.target;
      m.state = a == alert_action::resolve ? "RESOLVED" : a == alert_action::repeat ? "REPEAT" : "FIRING";
      m.status = r.status;
      m.text = r.text;
      m.host = host_name();
      m.time = now;
      m.figures = r.figures;
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
  int left = 0;
  for (const auto& n : files) {
    const std::string path = dir + "/" + n;
    // Claim the item so that a concurrent run does not send it too.
    const std::string claimed = path + ".sending." + host_name() + "." + std::to_string(getpid());
    if (rename(path.c_str(), claimed.c_str()) != 0) continue;
    nlohmann::json j;
    try {
      std::ifstream in(claimed);
      j = nlohmann::json::parse(in);
      const sink k = parse_sink(j.at("sink").get<std::string>());
      const alert_message m = alert_message::from_json(j.at("message").dump());
      std::string error;
      if (deliver(k, m, setup.delivery, &error)) {
        unlink(claimed.c_str());
        std::fprintf(stderr, "trainwatch: sent %s %s %s to %s\n", m.state.c_str(), m.check.c_str(), m.target.c_str(),
                     k.redacted().c_str());
        continue;
      }
      j["tries"] = j.value("tries", 0) + 1;
      write_atomically(claimed, j.dump() + "\n");
      std::fprintf(stderr, "trainwatch: could not send %s %s to %s (%s); kept in %s for the next run\n",
                   m.state.c_str(), m.check.c_str(), k.redacted().c_str(), error.c_str(), dir.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trainwatch: spooled alert %s is unreadable (%s); left as %s.bad\n", n.c_str(), e.what(),
                   path.c_str());
      rename(claimed.c_str(), (path + ".bad").c_str());
      ++left;
      continue;
    }
    rename(claimed.c_str(), path.c_str());
    ++left;
  }
  return left;
}

}  // namespace trainctl
