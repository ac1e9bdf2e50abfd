#include <sys/statvfs.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "alert_state.hpp"
#include "checks.hpp"
#include "history.hpp"
#include "subprocess.hpp"

namespace trainctl {
namespace {

bool below(const threshold& t, std::uint64_t free, std::uint64_t total) {
  switch (t.type) {
    case threshold::kind::percent:
      return total > 0 && 100.0 * static_cast<double>(free) / static_cast<double>(total) < t.percent;
    case threshold::kind::bytes:
      return free < t.bytes;
    case threshold::kind::none:
      break;
  }
  return false;
}

std::string count(std::uint64_t n) {
  char buf[32];
  if (n >= 10000000)
    std::snprintf(buf, sizeof buf, "%.0fM", static_cast<double>(n) / 1e6);
  else if (n >= 10000)
    std::snprintf(buf, sizeof buf, "%.0fk", static_cast<double>(n) / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
  return buf;
}

std::string human_time(double s) {
  char buf[64];
  if (s < 3600)
    std::snprintf(buf, sizeof buf, "%.0f min", s / 60);
  else if (s < 2 * 86400)
    std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  else
    std::snprintf(buf, sizeof buf, "%.1f days", s / 86400);
  return buf;
}

}  // namespace

std::optional<fs_reading> parse_fs_reading(const std::string& text) {
  std::istringstream in(text);
  fs_reading r;
  if (!(in >> r.total >> r.free >> r.inodes >> r.ifree)) return std::nullopt;
  return r;
}

std::optional<quota_reading> parse_quota_output(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::vector<std::string> w;
    std::string x;
    while (ls >> x) w.push_back(x);
    if (w.size() < 8) continue;
    auto num = [](std::string s, std::uint64_t& out) {
      while (!s.empty() && (s.back() == '*')) s.pop_back();
      if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 18) return false;
      out = std::stoull(s);
      return true;
    };
    quota_reading q;
    std::uint64_t soft = 0, hard = 0, fsoft = 0, fhard = 0;
    // Grace columns are "-" or a time; the numeric columns sit at fixed places.
    if (!num(w[1], q.used) || !num(w[2], soft) || !num(w[3], hard) || !num(w[5], q.files) || !num(w[6], fsoft) ||
        !num(w[7], fhard))
      continue;
    q.used *= 1024;
    q.limit = (hard ? hard : soft) * 1024;
    q.files_limit = fhard ? fhard : fsoft;
    return q;
  }
  return std::nullopt;
}

std::optional<double> runway_seconds(const std::vector<std::pair<double, double>>& h, double capacity) {
  if (h.size() < 3 || h.back().first - h.front().first < 60) return std::nullopt;
  // Least squares slope of used over time.
  double mt = 0, mu = 0;
  for (const auto& [t, u] : h) mt += t, mu += u;
  mt /= h.size();
  mu /= h.size();
  double num = 0, den = 0;
  for (const auto& [t, u] : h) num += (t - mt) * (u - mu), den += (t - mt) * (t - mt);
  if (den <= 0) return std::nullopt;
  const double rate = num / den;  // bytes per second
  if (rate <= 0 || !std::isfinite(rate)) return std::nullopt;
  const double left = capacity - h.back().second;
  return left <= 0 ? 0.0 : left / rate;
}

namespace {

// statfs of the target in a child bounded by its timeout (a hung mount blocks it
// forever): "TOTAL FREE INODES IFREE", "error TEXT", or nullopt when it did not answer.
std::optional<std::string> statfs_text(const fs_target& t) {
  const std::string path = t.path;
  child_spec statfs_child;
  statfs_child.deadline = t.timeout;
  statfs_child.work = [path] {
    struct statvfs v {};
    if (statvfs(path.c_str(), &v) != 0) return std::string("error ") + std::strerror(errno);
    char buf[128];
    std::snprintf(buf, sizeof buf, "%llu %llu %llu %llu", static_cast<unsigned long long>(v.f_blocks) * v.f_frsize,
                  static_cast<unsigned long long>(v.f_bavail) * v.f_frsize, static_cast<unsigned long long>(v.f_files),
                  static_cast<unsigned long long>(v.f_favail));
    return std::string(buf);
  };
  const child_result statfs_result = run_child(statfs_child);
  return statfs_result.ok() ? std::optional<std::string>(statfs_result.output) : std::nullopt;
}

// The quota command's figures, where they leave less than the filesystem: *total and
// *free become the quota's and *source "quota". What went wrong, or "".
std::string apply_quota(const fs_target& t, std::uint64_t* total, std::uint64_t* free, std::string* source) {
  child_spec quota;
  quota.argv = {"/bin/sh", "-c", t.quota_command};
  quota.deadline = t.timeout;
  const child_result qr = run_child(quota);
  if (!qr.ok()) return " (quota: " + qr.error + ")";
  if (auto q = parse_quota_output(qr.output); q && q->limit > 0 && q->limit - std::min(q->used, q->limit) < *free) {
    *total = q->limit;
    *free = q->limit - std::min(q->used, q->limit);
    *source = "quota";
  }
  return "";
}

check_result check_one_fs(const fs_target& t, const std::string& state_dir) {
  check_result r;
  r.check = "fs";
  r.target = t.path;
  r.status = kUnknown;
  const std::optional<std::string> text = statfs_text(t);
  if (!text) {
    r.text = t.path + ": statfs did not answer within " + format_duration(t.timeout) + " (hung mount?)";
    return r;
  }
  if (text->compare(0, 6, "error ") == 0) {
    r.text = t.path + ": " + text->substr(6);
    return r;
  }
  auto fr = parse_fs_reading(*text);
  if (!fr) {
    r.text = t.path + ": unreadable statfs answer";
    return r;
  }
  // Effective capacity: with factor 0.8, 80% used counts as full.
  const double eff_total = static_cast<double>(fr->total) * t.capacity;
  const double used = static_cast<double>(fr->total - fr->free);
  const std::uint64_t eff_free = eff_total > used ? static_cast<std::uint64_t>(eff_total - used) : 0;
  std::uint64_t total = static_cast<std::uint64_t>(eff_total), free = eff_free;
  std::string source = "filesystem";
  if (!t.quota_command.empty()) r.text = apply_quota(t, &total, &free, &source);
  int st = kOk;
  if (below(t.min_free, free, total) || below(t.min_free_inodes, fr->ifree, fr->inodes))
    st = kCritical;
  else if (below(t.warn_free, free, total) || below(t.warn_free_inodes, fr->ifree, fr->inodes))
    st = kWarning;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s: %s free of %s (%.1f%%, %s), %s inodes free of %s", t.path.c_str(),
                format_size(free).c_str(), format_size(total).c_str(),
                total ? 100.0 * static_cast<double>(free) / static_cast<double>(total) : 0.0, source.c_str(),
                count(fr->ifree).c_str(), count(fr->inodes).c_str());
  r.text = buf + r.text;
  if (!state_dir.empty()) {
    const auto hist = record_history(history_file(state_dir, "fs", t.path), static_cast<double>(time(nullptr)),
                                     static_cast<double>(total - free));
    if (auto run = runway_seconds(hist, static_cast<double>(total))) {
      r.text += "; full in " + human_time(*run) + " at the recent rate";
      r.figures.emplace_back("runway_seconds", *run);
    }
  }
  r.status = st;
  r.figures.emplace_back("free_bytes", static_cast<double>(free));
  r.figures.emplace_back("total_bytes", static_cast<double>(total));
  r.figures.emplace_back("free_inodes", static_cast<double>(fr->ifree));
  r.figures.emplace_back("total_inodes", static_cast<double>(fr->inodes));
  return r;
}

}  // namespace

std::vector<check_result> check_fs(const std::vector<fs_target>& targets, const std::string& state_dir) {
  std::vector<check_result> out;
  out.reserve(targets.size());
  for (const auto& t : targets) out.push_back(check_one_fs(t, state_dir));
  return out;
}

}  // namespace trainctl
