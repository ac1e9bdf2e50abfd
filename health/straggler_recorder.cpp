#include "straggler_recorder.hpp"

#include <sstream>
#include <vector>

#include "beat_fields.hpp"
#include "parse.hpp"
#include "straggler_fields.hpp"
#include "straggler_record.hpp"

namespace trainctl {

void straggler_recorder::look(const node_state& ns, const std::function<bool(pid_t)>& mine,
                              const std::string& log_dir) {
  if (writer_ || !has_header(ns)) return;
  std::vector<straggler_finding> found;
  for (const auto& b : ns.beats) {
    const beat_fields::beat_view v = beat_fields::read(b);
    const straggler_fields::straggler_report r = straggler_fields::last_report(b);
    const pid_t pid = v.pid;
    const std::int64_t reports = r.reports;
    if (pid <= 0 || reports <= 0 || !mine(pid)) continue;
    std::int64_t& seen = seen_[pid];
    if (reports <= seen) continue;
    seen = reports;
    straggler_finding f;
    f.rank = v.rank;
    f.job = opts_.job_id;
    f.step = r.step;
    f.slow_us = r.slow_us;
    f.fastest_us = r.fastest_us;
    if (f.slow_us > 0 && f.fastest_us > 0) found.push_back(f);
  }
  if (found.empty()) return;
  child_spec spec;
  spec.ignore_signals = opts_.notices;
  spec.ignore_signals.push_back(opts_.graceful_signal);
  spec.work = [found, log_dir]() -> std::string {
    std::string out;
    for (const auto& f : found) {
      std::istringstream said(record_straggler(f, log_dir));
      for (std::string line; std::getline(said, line);) out += "rank " + std::to_string(f.rank) + ": " + line + "\n";
    }
    return out;
  };
  writer_ = std::make_unique<started_child>(spec);
  writer_by_ = std::chrono::steady_clock::now() + kLimit;
}

bool straggler_recorder::reaped(pid_t pid, int status) {
  if (!writer_ || pid != writer_->pid()) return false;
  const child_result r = writer_->finish(status);
  writer_.reset();
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) log_("straggler: " + line);
  if (!r.ok()) log_("straggler: the finding was not recorded: " + r.error);
  return true;
}

void straggler_recorder::tick() {
  if (!writer_ || std::chrono::steady_clock::now() < writer_by_) return;
  writer_->abandon();
  writer_.reset();
  log_("straggler: the finding was not recorded: the log directory or the home did not answer within " +
       format_duration(kLimit));
}

}  // namespace trainctl
