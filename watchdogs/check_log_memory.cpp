#include <glob.h>
#include <sys/stat.h>

#include <ctime>
#include <fstream>
#include <sstream>

#include "alert_state.hpp"
#include "cgroup_memory.hpp"
#include "checks.hpp"
#include "history.hpp"

namespace trainctl {

check_result check_log_stall(const log_stall_options& o) {
  check_result r;
  r.check = "log-stall";
  for (const auto& p : o.patterns) r.target += (r.target.empty() ? "" : " ") + p;
  std::int64_t newest = 0;
  std::string newest_path;
  size_t files = 0;
  for (const auto& p : o.patterns) {
    glob_t g{};
    if (glob(p.c_str(), GLOB_NOSORT, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        struct stat st {};
        if (stat(g.gl_pathv[i], &st) != 0 || !S_ISREG(st.st_mode)) continue;
        ++files;
        const std::int64_t ms = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
        if (ms > newest) newest = ms, newest_path = g.gl_pathv[i];
      }
    }
    globfree(&g);
  }
  if (files == 0) {
    r.status = kUnknown;
    r.text = "no log file matches " + r.target;
    return r;
  }
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const std::int64_t age = static_cast<std::int64_t>(now.tv_sec) * 1000 + now.tv_nsec / 1000000 - newest;
  struct stat st {};
  const bool saving = !o.save_marker.empty() && stat(o.save_marker.c_str(), &st) == 0;
  const auto limit = saving ? o.save_max_age : o.max_age;
  r.figures.emplace_back("age_seconds", static_cast<double>(age) / 1000);
  r.figures.emplace_back("files", static_cast<double>(files));
  const std::string age_text = format_duration(std::chrono::milliseconds(age / 1000 * 1000));
  if (age > limit.count()) {
    r.status = kCritical;
    r.text = "no log written for " + age_text + " (newest " + newest_path + "; limit " + format_duration(limit) +
             (saving ? ", saving" : "") + ")";
  } else {
    r.status = kOk;
    r.text = "last write " + age_text + " ago in " + newest_path + (saving ? " (a save is in progress)" : "");
  }
  return r;
}

check_result check_memory(const memory_options& o, const std::string& state_dir) {
  auto m = read_memory(o.root);
  if (!m) {
    check_result r;
    r.check = "memory";
    r.status = kUnknown;
    r.target = "memory";
    r.text = "no memory reading (no /proc/meminfo or cgroup files)";
    return r;
  }
  return judge_memory(*m, o, state_dir, m->source);
}

check_result judge_memory(const memory_reading& reading, const memory_options& o, const std::string& state_dir,
                          const std::string& target) {
  check_result r;
  r.check = "memory";
  const memory_reading* m = &reading;
  r.target = target;
  auto crossed = [&](const threshold& t) {
    switch (t.type) {
      case threshold::kind::percent:
        return 100.0 - m->used_percent() < t.percent;
      case threshold::kind::bytes:
        return m->available() < t.bytes;
      case threshold::kind::none:
        break;
    }
    return false;
  };
  r.status = crossed(o.min_available) ? kCritical : crossed(o.warn_available) ? kWarning : kOk;
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s available of %s (%.1f%% used) in %s", format_size(m->available()).c_str(),
                format_size(m->limit).c_str(), m->used_percent(), m->source.c_str());
  r.text = buf;
  r.figures.emplace_back("used_bytes", static_cast<double>(m->used));
  r.figures.emplace_back("limit_bytes", static_cast<double>(m->limit));
  // Slow leaks: the growth over the kept history, and when it would reach the limit.
  if (!state_dir.empty()) {
    const auto pts = record_history(history_file(state_dir, "memory", target), static_cast<double>(time(nullptr)),
                                    static_cast<double>(m->used));
    if (auto left = runway_seconds(pts, static_cast<double>(m->limit))) {
      r.figures.emplace_back("seconds_to_limit", *left);
      char lb[96];
      std::snprintf(lb, sizeof lb, "; at the recent growth the limit is reached in %.1f h", *left / 3600);
      r.text += lb;
      if (*left < std::chrono::duration<double>(o.leak_horizon).count() && r.status == kOk) r.status = kWarning;
    }
  }
  return r;
}

}  // namespace trainctl
