#include "run_log.hpp"

#include <memory>
#include <thread>
#include <utility>

#include "exit_reasons.hpp"
#include "log_line.hpp"
#include "node_state.hpp"
#include "run_event_kinds.hpp"

namespace trainctl {

void run_log::write_to(const std::string& path, const std::string& job) {
  path_ = path;
  job_ = job;
}

void run_log::note(const char* what, std::int64_t step, std::int64_t took_ms, const std::string& reason) {
  run_event e = make_run_event(what, job_, unix_now_ms());
  e.step = step;
  e.took_ms = took_ms;
  e.reason = reason;
  note(e);
}

void run_log::note(const run_event& e) {
  if (!on()) return;
  {
    std::lock_guard<std::mutex> hold(mu_);
    lines_ += format_run_event(e);
  }
  wake_();
}

void run_log::note_notices(std::uint32_t flags) {
  if (!on()) return;
  for (const exit_reason& e : kExitReasons)
    if (e.notice && (flags & e.flag) != 0 && (noticed_.fetch_or(e.flag) & e.flag) == 0)
      note(run_event_kind::kNotice, -1, -1, e.name);
}

void run_log::queue_straggler(const straggler_finding& f) {
  {
    std::lock_guard<std::mutex> hold(mu_);
    findings_.push_back(f);
  }
  wake_();
}

std::string run_log::take_lines() {
  std::lock_guard<std::mutex> hold(mu_);
  return std::exchange(lines_, std::string());
}

std::vector<straggler_finding> run_log::take_findings() {
  std::lock_guard<std::mutex> hold(mu_);
  return std::exchange(findings_, {});
}

void run_log::flush(const std::string& straggler_dir) {
  const std::string lines = take_lines();
  if (!lines.empty()) {
    const std::string why = append_run_events(path_, lines);
    if (!why.empty() && why != problem_)
      log_line(kLogWarning, "trainctl: %s; `trainctl report` will not see this task's saves\n", why.c_str());
    problem_ = why;
  }
  for (const auto& f : take_findings()) {
    const std::string said = record_straggler(f, straggler_dir);
    // Only what did not happen: the rank's line said where it goes.
    for (std::size_t at = 0, end; at < said.size(); at = end + 1) {
      end = said.find('\n', at);
      const std::string line = said.substr(at, end - at);
      if (line.compare(0, 12, "recorded in ") != 0) log_line(kLogWarning, "trainctl: %s\n", line.c_str());
    }
  }
}

void run_log::flush_at_end(const std::string& straggler_dir) {
  std::string lines = take_lines();
  std::vector<straggler_finding> findings = take_findings();
  if (lines.empty() && findings.empty()) return;
  auto done = std::make_shared<std::atomic<bool>>(false);
  // Detached: it holds no reference to this object (the lines and findings go by value).
  std::thread([path = path_, lines = std::move(lines), findings = std::move(findings), dir = straggler_dir, done] {
    if (!lines.empty()) append_run_events(path, lines);
    for (const auto& f : findings) record_straggler(f, dir);
    done->store(true, std::memory_order_release);
  }).detach();
  for (int i = 0; i < 200 && !done->load(std::memory_order_acquire); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

}  // namespace trainctl
