// The login side of trainctl status: the nodes' lines into one view, and that view as
// a table or as JSON (see job_status.hpp for the lines).
#include "job_status.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "error_fields.hpp"
#include "node_names.hpp"
#include "node_state.hpp"
#include "parse.hpp"
#include "slurm_job.hpp"
#include "time_text.hpp"

namespace trainctl {
namespace {

std::int64_t num(const std::string& line, const char* key) {
  return std::strtoll(scontrol_field(line, key).c_str(), nullptr, 10);
}

// The rest of the line after " key=": the one field that may hold spaces.
std::string tail_field(const std::string& line, const std::string& key) {
  const size_t at = line.find(" " + key + "=");
  return at == std::string::npos ? "" : line.substr(at + key.size() + 2);
}

// 0.3s, 12.4s, 41m12s, 1h02m, 3d04h: as precise as a person reading a countdown needs.
std::string clock_text(std::int64_t ms) {
  const bool neg = ms < 0;
  const std::int64_t a = neg ? -ms : ms;
  char buf[48];
  if (a < 60000)
    std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(a) / 1000.0);
  else if (a < 3600000)
    std::snprintf(buf, sizeof buf, "%" PRId64 "m%02" PRId64 "s", a / 60000, a / 1000 % 60);
  else if (a < 86400000)
    std::snprintf(buf, sizeof buf, "%" PRId64 "h%02" PRId64 "m", a / 3600000, a / 60000 % 60);
  else
    std::snprintf(buf, sizeof buf, "%" PRId64 "d%02" PRId64 "h", a / 86400000, a / 3600000 % 24);
  return (neg ? "-" : "") + std::string(buf);
}

std::string local_time(std::int64_t unix_s) { return local_timestamp(unix_s); }

struct notice_name {
  std::uint32_t bit;
  const char* text;
};
constexpr notice_name kNotices[] = {
    {kFlagPreempted, "preempted"},
    {kFlagDeadline, "deadline reached"},
    {kFlagSignal, "a notice signal (scancel --signal, --signal=SIG@TIME)"},
    {kFlagMemory, "memory below its threshold"},
    {kFlagExitSwitch, "an exit switch is there"},
    {kFlagHang, "a supervisor found a hang"},
};

std::uint32_t all_flags(const job_status& s) {
  std::uint32_t f = 0;
  for (const auto& n : s.nodes) f |= n.flags & kKnownFlags;
  return f;
}

// The earliest deadline any node publishes (they agree when one supervisor per node
// read the same EndTime).
const status_node* first_deadline(const job_status& s) {
  const status_node* best = nullptr;
  for (const auto& n : s.nodes)
    if (n.has_deadline && (best == nullptr || n.deadline_ms < best->deadline_ms)) best = &n;
  return best;
}

std::string switches_text(const job_status& s) {
  std::string out;
  for (const auto& w : s.switches) {
    out += out.empty() ? "" : "; ";
    out += w.name + " " + w.path + ": ";
    if (w.kind == "exit")
      out += w.present ? "THERE (the job exits at its next step boundary)" : "not there";
    else
      out += w.touches == 0 ? "not touched"
                            : "touched " + std::to_string(w.touches) + " time" + (w.touches == 1 ? "" : "s");
  }
  return out.empty() ? "none registered" : out;
}

status_node node_of(const std::string& line, const std::string& host) {
  status_node n;
  n.node = host;
  const std::int64_t now = num(line, "now_ms");
  n.flags = static_cast<std::uint32_t>(num(line, "flags"));
  n.deadline_ms = num(line, "deadline_ms");
  n.has_deadline = n.deadline_ms > 0;
  n.deadline_in_ms = n.deadline_ms - now;
  n.supervised = num(line, "supervised") != 0;
  const std::int64_t pub = num(line, "published_ms");
  n.published_age_ms = pub > 0 ? now - pub : -1;
  n.longest_save_ms = num(line, "longest_save_ms");
  return n;
}

status_death death_of(const std::string& line, const std::string& host) {
  status_death d;
  d.node = host;
  d.rank = static_cast<int>(num(line, "rank"));
  d.pid = static_cast<int>(num(line, "pid"));
  d.error = printable_line(tail_field(line, "error"), kMaxError);  // as the table shows it
  return d;
}

// `node_now`: the node's own clock from its node line (ages are the node's), 0 when none came.
status_rank rank_of(const std::string& line, const std::string& host, std::int64_t node_now) {
  status_rank r;
  r.node = host;
  r.rank = static_cast<int>(num(line, "rank"));
  r.pid = static_cast<int>(num(line, "pid"));
  r.step = num(line, "step");
  const std::int64_t beat = num(line, "beat_ms");
  r.since_check_ms = beat > 0 && node_now != 0 ? std::max<std::int64_t>(0, node_now - beat) : -1;
  r.step_us = num(line, "step_us");
  r.slow = static_cast<int>(num(line, "slow"));
  r.agreements = std::max<int>(1, static_cast<int>(num(line, "agreements")));
  r.mem_free = std::strtoull(scontrol_field(line, "mem_free").c_str(), nullptr, 10);
  r.mem_limit = std::strtoull(scontrol_field(line, "mem_limit").c_str(), nullptr, 10);
  return r;
}

// One row per switch: any node that sees an exit switch sees it for the job.
void add_switch(std::vector<status_switch>& switches, const std::string& line, const std::string& host) {
  status_switch w;
  w.node = host;
  w.kind = scontrol_field(line, "kind");
  w.name = scontrol_field(line, "name");
  w.path = tail_field(line, "path");
  w.present = num(line, "present") != 0;
  w.touches = num(line, "touches");
  auto same = std::find_if(switches.begin(), switches.end(), [&](const status_switch& o) {
    return std::tie(o.kind, o.name, o.path) == std::tie(w.kind, w.name, w.path);
  });
  if (same == switches.end()) {
    switches.push_back(w);
  } else {
    same->present |= w.present;
    same->touches = std::max(same->touches, w.touches);
  }
}

}  // namespace

job_status parse_status_lines(const std::string& text, const status_job& job) {
  job_status s;
  s.job = job;
  std::map<std::string, std::int64_t> node_now;  // each node's own clock, for ages
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const size_t sp = line.find(' ');
    const std::string kind = line.substr(0, sp);
    const std::string host = scontrol_field(line, "host");
    const bool known = kind == "node" || kind == "rank" || kind == "switch" || kind == "error" || kind == "died";
    if (!known) {
      if (!line.empty()) s.other.push_back(line);
      continue;
    }
    if (!valid_node_name(host)) {
      s.errors.push_back("a line from no valid node name was dropped");
      continue;
    }
    if (kind == "error") {
      const size_t text_at = std::string("error host=").size() + host.size() + 1;
      s.errors.push_back(host + ": " + (line.size() > text_at ? line.substr(text_at) : "(no text)"));
    } else if (kind == "node") {
      s.nodes.push_back(node_of(line, host));
      node_now[host] = num(line, "now_ms");
    } else if (kind == "died") {
      s.deaths.push_back(death_of(line, host));
    } else if (kind == "rank") {
      const auto now = node_now.find(host);
      s.ranks.push_back(rank_of(line, host, now != node_now.end() ? now->second : 0));
    } else {
      add_switch(s.switches, line, host);
    }
  }
  std::sort(s.ranks.begin(), s.ranks.end(), [](const status_rank& a, const status_rank& b) {
    return std::tie(a.rank, a.node, a.pid) < std::tie(b.rank, b.node, b.pid);
  });
  std::int64_t fastest = 0;
  for (const auto& r : s.ranks)
    if (r.step_us > 0 && (fastest == 0 || r.step_us < fastest)) fastest = r.step_us;
  for (auto& r : s.ranks)
    if (r.step_us > 0 && fastest > 0) r.factor = static_cast<double>(r.step_us) / static_cast<double>(fastest);
  return s;
}

std::vector<std::string> status_findings(const job_status& s) {
  std::vector<std::string> out;
  for (const auto& r : s.ranks)
    if (r.slow >= r.agreements) {
      char line[256];
      std::snprintf(line, sizeof line,
                    "rank %d on %s is a straggler: x%.2f the fastest rank's step time, the slowest in %d agreements "
                    "in a row",
                    r.rank, r.node.c_str(), r.factor, r.slow);
      out.push_back(line);
    }
  if ((all_flags(s) & kFlagHang) != 0)
    out.push_back("a supervisor found a hang (its stacks are in the job's log directory)");
  for (const auto& d : s.deaths)
    out.push_back((d.rank >= 0 ? "rank " + std::to_string(d.rank) : std::string("a rank")) + " on " + d.node +
                  " (pid " + std::to_string(d.pid) + ") died of `" + d.error + "`");
  return out;
}

namespace {

std::string status_table_text(const job_status& s) {
  std::string out;
  std::vector<std::string> nodes;
  for (const auto& r : s.ranks)
    if (std::find(nodes.begin(), nodes.end(), r.node) == nodes.end()) nodes.push_back(r.node);
  char line[512];
  std::snprintf(line, sizeof line, "job %s (%s) %s on %s: %zu rank%s on %zu node%s\n", s.job.id.c_str(),
                s.job.name.c_str(), s.job.state.c_str(), s.job.node_list.c_str(), s.ranks.size(),
                s.ranks.size() == 1 ? "" : "s", nodes.size(), nodes.size() == 1 ? "" : "s");
  out += line;
  if (s.job.end_ms > 0)
    out += "time limit  EndTime " + local_time(s.job.end_ms / 1000) + ", in " +
           clock_text(s.job.end_ms - s.job.now_ms) + "\n";
  if (const status_node* d = first_deadline(s)) {
    out += "deadline    in " + clock_text(d->deadline_in_ms);
    if (s.job.end_ms > 0)
      out += " (EndTime minus the graceful exit, " + clock_text(s.job.end_ms - d->deadline_ms) + ")";
    out += "\n";
  } else {
    out += "deadline    none published (no --graceful-exit, or no supervisor read EndTime)\n";
  }
  out += "switches    " + switches_text(s) + "\n";
  std::int64_t longest_save = 0;
  for (const auto& n : s.nodes) longest_save = std::max(longest_save, n.longest_save_ms);
  if (longest_save > 0) {
    std::snprintf(line, sizeof line,
                  "saves       the longest took %.1f s (from the decision to the rank's next call)\n",
                  static_cast<double>(longest_save) / 1000.0);
    out += line;
  }
  std::string notices;
  for (const auto& n : kNotices)
    if ((all_flags(s) & n.bit) != 0) notices += (notices.empty() ? "" : ", ") + std::string(n.text);
  out += "notices     " + (notices.empty() ? std::string("none") : notices) + "\n";
  const auto findings = status_findings(s);
  out += "findings    " + (findings.empty() ? std::string("none") : findings[0]) + "\n";
  for (size_t i = 1; i < findings.size(); ++i) out += "            " + findings[i] + "\n";
  for (const auto& e : s.errors) out += "error       " + e + "\n";
  out += "\n";
  std::snprintf(line, sizeof line, "%-14s %5s %8s %9s %11s %11s %7s %9s\n", "NODE", "RANK", "PID", "STEP", "LAST CHECK",
                "STEP TIME", "FACTOR", "MEM FREE");
  out += line;
  for (const auto& r : s.ranks) {
    const std::string since = r.since_check_ms < 0 ? "-" : clock_text(r.since_check_ms) + " ago";
    char step_time[32] = "-", factor[32] = "-";
    if (r.step_us > 0) std::snprintf(step_time, sizeof step_time, "%.1f ms", static_cast<double>(r.step_us) / 1000.0);
    if (r.factor > 0) std::snprintf(factor, sizeof factor, "%.2f%s", r.factor, r.slow >= r.agreements ? "*" : "");
    std::snprintf(line, sizeof line, "%-14s %5d %8d %9s %11s %11s %7s %9s\n", r.node.c_str(), r.rank, r.pid,
                  r.step < 0 ? "-" : std::to_string(r.step).c_str(), since.c_str(), step_time, factor,
                  r.mem_limit > 0 ? format_size(r.mem_free).c_str() : "-");
    out += line;
  }
  if (s.ranks.empty()) out += "(no rank has registered with trainctl on the job's nodes yet)\n";
  return out;
}

// A job name, a path or a node's line may hold control characters (the job's user chose
// them, or anyone who could name a file there): shown as \xNN, so nothing printed here
// can move the cursor, clear the screen or retitle the terminal. JSON escapes its own.
std::string escape_controls(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\n' || (c >= 0x20 && c != 0x7f)) {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  return out;
}

}  // namespace

std::string format_status_table(const job_status& s) { return escape_controls(status_table_text(s)); }

std::string format_status_json(const job_status& s, bool lines) {
  using nlohmann::json;
  json j;
  j["schema"] = 1;
  j["job"] = {{"id", s.job.id}, {"name", s.job.name}, {"state", s.job.state}, {"nodes", s.job.node_list}};
  j["now_ms"] = s.job.now_ms;
  j["end_ms"] = s.job.end_ms > 0 ? json(s.job.end_ms) : json(nullptr);
  if (const status_node* d = first_deadline(s)) {
    j["deadline"] = {
        {"at_ms", d->deadline_ms},
        {"in_s", static_cast<double>(d->deadline_in_ms) / 1000.0},
        {"graceful_exit_s", s.job.end_ms > 0 ? json((s.job.end_ms - d->deadline_ms) / 1000) : json(nullptr)}};
  } else {
    j["deadline"] = nullptr;
  }
  std::int64_t longest_save = 0;
  for (const auto& n : s.nodes) longest_save = std::max(longest_save, n.longest_save_ms);
  j["longest_save_s"] = longest_save > 0 ? json(static_cast<double>(longest_save) / 1000.0) : json(nullptr);
  json notices = json::array();
  for (const auto& n : kNotices)
    if ((all_flags(s) & n.bit) != 0) notices.push_back(n.text);
  j["notices"] = notices;
  j["switches"] = json::array();
  for (const auto& w : s.switches)
    j["switches"].push_back(
        {{"kind", w.kind}, {"name", w.name}, {"path", w.path}, {"present", w.present}, {"touches", w.touches}});
  j["ranks"] = json::array();
  for (const auto& r : s.ranks)
    j["ranks"].push_back({{"node", r.node},
                          {"rank", r.rank},
                          {"pid", r.pid},
                          {"step", r.step < 0 ? json(nullptr) : json(r.step)},
                          {"since_check_s", r.since_check_ms < 0 ? json(nullptr) : json(r.since_check_ms / 1000.0)},
                          {"step_ms", r.step_us > 0 ? json(r.step_us / 1000.0) : json(nullptr)},
                          {"factor", r.factor > 0 ? json(r.factor) : json(nullptr)},
                          {"straggler", r.slow >= r.agreements},
                          {"slow_agreements", r.slow},
                          {"mem_free_bytes", r.mem_limit > 0 ? json(r.mem_free) : json(nullptr)},
                          {"mem_limit_bytes", r.mem_limit > 0 ? json(r.mem_limit) : json(nullptr)}});
  j["findings"] = status_findings(s);
  j["errors"] = s.errors;
  return (lines ? j.dump() : j.dump(2)) + "\n";
}

namespace {

std::string deadline_cell(const job_status& s) {
  const status_node* d = first_deadline(s);
  return d == nullptr ? "none" : "in " + clock_text(d->deadline_in_ms);
}

std::string findings_cell(const job_status& s) {
  const auto f = status_findings(s);
  if (f.empty()) return "none";
  return f.front() +
         (f.size() > 1 ? " (+" + std::to_string(f.size() - 1) + " more: trainctl status " + s.job.id + ")" : "");
}

}  // namespace

std::string format_job_list(const std::vector<job_status>& jobs, const std::vector<std::string>& unsupervised,
                            const std::vector<std::string>& held) {
  std::vector<std::vector<std::string>> rows{{"JOB", "NAME", "NODES", "RANKS", "DEADLINE", "FINDINGS"}};
  for (const auto& s : jobs)
    rows.push_back(
        {s.job.id, s.job.name, s.job.node_list, std::to_string(s.ranks.size()), deadline_cell(s), findings_cell(s)});
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::string out;
  if (!jobs.empty())
    for (const auto& r : rows) {
      std::string line;
      for (std::size_t i = 0; i < r.size(); ++i)
        line += i + 1 < r.size() ? r[i] + std::string(width[i] - r[i].size() + 2, ' ') : r[i];
      out += line + "\n";
    }
  if (jobs.empty())
    out += unsupervised.empty() ? "no running jobs of yours\n" : "no running job of yours is supervised by trainctl\n";
  if (!unsupervised.empty()) {
    std::string ids;
    for (const auto& id : unsupervised) ids += (ids.empty() ? "" : " ") + id;
    out += std::to_string(unsupervised.size()) + (jobs.empty() ? "" : " other") + " running job" +
           (unsupervised.size() == 1 ? "" : "s") + " of yours without trainctl (no node state on its nodes): " + ids +
           "\n";
  }
  if (!held.empty()) {
    std::string ids;
    for (const auto& h : held) ids += (ids.empty() ? "" : ", ") + h;
    out += std::to_string(held.size()) + " held job" + (held.size() == 1 ? "" : "s") + " of yours: " + ids +
           " (after a kill switch: remove it, then scontrol release the ids to go on)\n";
  }
  return escape_controls(out);
}

std::string format_job_list_json(const std::vector<job_status>& jobs, const std::vector<std::string>& unsupervised,
                                 const std::vector<std::string>& held) {
  using nlohmann::json;
  json j;
  j["schema"] = 1;
  j["jobs"] = json::array();
  for (const auto& s : jobs) {
    const status_node* d = first_deadline(s);
    j["jobs"].push_back(
        {{"id", s.job.id},
         {"name", s.job.name},
         {"nodes", s.job.node_list},
         {"ranks", s.ranks.size()},
         {"deadline_ms", d == nullptr ? json(nullptr) : json(d->deadline_ms)},
         {"deadline_in_s", d == nullptr ? json(nullptr) : json(static_cast<double>(d->deadline_in_ms) / 1000.0)},
         {"findings", status_findings(s)}});
  }
  j["unsupervised"] = unsupervised;
  j["held"] = held;
  return j.dump(2) + "\n";
}

}  // namespace trainctl
