// The rank's saves: committed (saved), handed off to a write that goes on (save_begin,
// save_end), waited for at the rank's end (wait_for_saves), and where to resume from
// (resume_path). A save counts from its start (the decision, or the loop's "save" phase)
// to its commit: --graceful-exit=auto learns that length, not the blocking part.
#include <cinttypes>
#include <ctime>

#include "beat_fields.hpp"
#include "committed_saves.hpp"
#include "controller_impl.hpp"
#include "deadline_fields.hpp"
#include "env.hpp"
#include "error_fields.hpp"
#include "rank_variable.hpp"
#include "run_event_kinds.hpp"
#include "run_id.hpp"
#include "save_fields.hpp"

namespace trainctl {
namespace {

// Stops waiting this long before the job's end, so the line that says a write will be
// cut gets out before the end does.
constexpr std::int64_t kSayBeforeEndMs = 2000;

// The process's last resume_path() look: what the next controller's first step tells
// `trainctl report` (a task that starts fresh although saves exist).
std::atomic<std::int64_t> g_resumed_step{-2};  // -2: no look; -1: nothing found
std::atomic<int> g_untrusted{0};

std::string without_prefix(const char* what) {
  const std::string s = what;
  return s.rfind("trainctl: ", 0) == 0 ? s.substr(10) : s;
}

// Rank 0 of the launcher's ranks (or no rank said): who logs what every rank would.
bool first_rank() {
  const rank_variable r = rank_variable_of(env_text);
  return r.name == nullptr || r.text == "0";
}

double seconds(std::int64_t us) { return static_cast<double>(us) / 1e6; }

// A time of day as the job's log shows it, e.g. 14:05:09.
std::string clock_time(std::int64_t unix_ms) {
  const time_t t = static_cast<time_t>(unix_ms / 1000);
  struct tm tm {};
  char buf[16] = "?";
  if (localtime_r(&t, &tm) != nullptr) std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

}  // namespace

void controller::impl::note_resume(std::int64_t step, int untrusted) {
  g_resumed_step.store(step, std::memory_order_relaxed);
  g_untrusted.store(untrusted, std::memory_order_relaxed);
}

std::pair<std::int64_t, int> last_resume_look() {
  return {g_resumed_step.load(std::memory_order_relaxed), g_untrusted.load(std::memory_order_relaxed)};
}

std::string controller::resume_path(const std::string& dir) {
  const resume_scan scan = scan_saves(dir);
  impl::note_resume(scan.found ? scan.found->step : -1, scan.untrusted);
  if (first_rank()) {
    if (!scan.exposed.empty()) log_line(kLogWarning, "trainctl: resume_path(): %s\n", scan.exposed.c_str());
    if (!scan.why.empty() && scan.found)
      log_line(kLogWarning, "trainctl: resume_path(): resuming from step %" PRId64 " (%s); %s\n", scan.found->step,
               scan.found->path.c_str(), scan.why.c_str());
    else if (!scan.why.empty())
      log_line(kLogWarning, "trainctl: resume_path(): no save in %s to resume from: %s; it returns none\n", dir.c_str(),
               scan.why.c_str());
  }
  return scan.found ? scan.found->path : std::string();
}

bool controller::impl::commit(std::int64_t step, const std::string& path, std::int64_t began_us, bool strict) {
  const int rank = cfg.rank;
  const long world = cfg.world_size > 0 ? cfg.world_size : world_size();
  if (rank >= world)
    throw std::invalid_argument(
        "trainctl: saved(): this process is rank " + std::to_string(rank) + " but the world has " +
        std::to_string(world) +
        " (the setting world_size, else WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMIX_SIZE, PMI_SIZE or "
        "SLURM_NTASKS); accepted: a rank below the world size");
  commit_marker m;
  m.step = step;
  m.rank = rank;
  m.world = world;
  m.run = controller::run_id();
  m.attempt = save_attempt(env_text);
  try {
    commit_checkpoint(path, m);
  } catch (const std::invalid_argument& e) {
    if (strict) throw;
    log_line(kLogWarning, "trainctl: the save at step %" PRId64 " ended, but is not committed: %s\n", step,
             without_prefix(e.what()).c_str());
    return false;
  } catch (const std::system_error& e) {
    log_line(kLogWarning,
             "trainctl: the save at step %" PRId64
             " is written but not committed: %s; the loop trains on, and "
             "resume_path() keeps the save before\n",
             step, without_prefix(e.what()).c_str());
    return false;
  }
  const std::int64_t took_ms = (steady_us() - began_us) / 1000;
  if (began_us > 0) {
    beat_fields::learn_save_ms(state(), took_ms);  // --graceful-exit=auto: the save's whole length
    note_event(run_event_kind::kCommit, step, took_ms, "");
  }
  if (beat != nullptr) save_fields::committed(*beat, step, unix_now_ms());
  return true;
}

bool controller::saved(std::int64_t step, const std::string& path) { return impl_->commit(step, path, 0, true); }

std::uint64_t controller::save_begin(std::int64_t step, const std::string& path) {
  impl& m = *impl_;
  if (step < 0)
    throw std::invalid_argument("trainctl: save_begin(): step " + std::to_string(step) + "; accepted: 0 or more");
  if (path.empty()) throw std::invalid_argument("trainctl: save_begin(): no path; accepted: the checkpoint's path");
  const std::int64_t now = steady_us();
  std::int64_t began = now;
  bool save_phase_open = false;
  for (const auto& [phase, since] : m.pos.open_phases)
    if (phase == kPhaseSave) {
      began = std::min(began, since);
      save_phase_open = true;
    }
  if (m.pos.save_started_us != 0) {
    began = std::min(began, m.pos.save_started_us);
    // The loop handed the write off: the blocking part of the save it decided ends here,
    // and the rank trains on (its "save" phase, when open, ends with the phase).
    if (!save_phase_open) m.end_of_save();
  }
  uncommit_checkpoint(path, m.cfg.rank);  // redone in place: uncommitted until this write's commit
  const std::uint64_t id = m.writes.add(step, path, began, now);
  m.publish_pending();
  return id;
}

void controller::save_starts(const std::string& path) { uncommit_checkpoint(path, impl_->cfg.rank); }

bool controller::save_end(std::uint64_t ticket, const std::string& error) {
  impl& m = *impl_;
  const std::optional<pending_write> w = m.writes.claim(ticket);
  if (!w)
    throw std::invalid_argument("trainctl: save_end(): ticket " + std::to_string(ticket) +
                                " is no pending write; accepted: what save_begin() returned, once");
  // Pending until its commit is written: a wait for the writes ends after the commits.
  struct ended {
    impl& m;
    std::uint64_t id;
    ended(const ended&) = delete;
    ended& operator=(const ended&) = delete;
    ~ended() {
      m.writes.done(id);
      m.publish_pending();
    }
  } when_done{m, ticket};
  if (!error.empty()) {
    if (m.cfg.rank == 0 && m.events.on()) {
      run_event e = make_run_event(run_event_kind::kWriteFailed, m.events.job(), unix_now_ms());
      e.step = w->step;
      e.took_ms = (steady_us() - w->began_us) / 1000;
      e.text = printable_line(error, 200);
      m.events.note(e);
    }
    log_line(kLogWarning,
             "trainctl: the save at step %" PRId64
             " (%s) failed %.1f s after it began: %s; nothing is committed, "
             "and resume_path() keeps the save before\n",
             w->step, w->path.c_str(), seconds(steady_us() - w->began_us), printable_line(error, 300).c_str());
    return false;
  }
  const bool done = m.commit(w->step, w->path, w->began_us, false);
  if (done && m.cfg.rank == 0)
    log_line(kLogInfo, "trainctl: the save at step %" PRId64 " is written and committed, %.1f s after it began\n",
             w->step, seconds(steady_us() - w->began_us));
  return done;
}

std::size_t controller::pending_saves() const { return impl_->writes.size(); }

void controller::impl::publish_pending() {
  if (beat == nullptr) return;
  const std::vector<pending_write> now = writes.list();
  if (now.empty()) {
    save_fields::pending(*beat, 0, 0, 0);
    return;
  }
  const pending_write& oldest = now.front();
  save_fields::pending(*beat, static_cast<std::int32_t>(now.size()), oldest.step,
                       unix_now_ms() - (steady_us() - oldest.began_us) / 1000);
}

std::size_t controller::wait_for_saves(double timeout_s) {
  impl& m = *impl_;
  const std::vector<pending_write> pending = m.writes.list();
  if (pending.empty()) return 0;
  const std::int64_t start = steady_us();
  std::int64_t until = timeout_s >= 0 ? start + static_cast<std::int64_t>(timeout_s * 1e6) : 0;
  const std::int64_t end_ms = deadline_fields::end_time(m.state()).end_ms;
  std::string bound =
      timeout_s >= 0
          ? "at most " + format_duration(std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000)))
          : "as long as it takes (no job end known)";
  if (end_ms > 0) {
    const std::int64_t left_ms = end_ms - unix_now_ms() - kSayBeforeEndMs;
    const std::int64_t by_end = start + std::max<std::int64_t>(0, left_ms) * 1000;
    if (until == 0 || by_end < until) {
      until = by_end;
      bound = "until 2 s before the job ends at " + clock_time(end_ms);
    }
  }
  const pending_write& first = pending.front();
  log_line(kLogInfo,
           "trainctl: waiting for this rank's writes: %zu pending, the save at step %" PRId64
           " begun %.1f s ago; waiting %s\n",
           pending.size(), first.step, seconds(start - first.began_us), bound.c_str());
  if (m.beat != nullptr) save_fields::waiting(*m.beat, true);
  m.show_phase(kPhaseWrite);
  if (until == 0 || until > start) m.writes.wait(until, steady_us);
  const std::vector<pending_write> left = m.writes.list();
  if (m.beat != nullptr) save_fields::waiting(*m.beat, false);
  m.show_phase(m.current_phase());
  const double waited = seconds(steady_us() - start);
  if (left.empty()) {
    log_line(kLogInfo, "trainctl: waited %.1f s for this rank's writes; every one ended\n", waited);
    return 0;
  }
  // Said once: the rank's end does not wait for these again, and keeps them in its
  // beat for the supervisor; rank 0's run events name each for the report.
  m.writes_given_up.store(true, std::memory_order_release);
  for (const pending_write& w : left) {
    m.note_event(run_event_kind::kWriteCut, w.step, (steady_us() - w.began_us) / 1000,
                 end_ms > 0 ? "job-end" : "timeout");
    log_line(kLogWarning,
             "trainctl: the save at step %" PRId64
             " (%s) is still being written %.1f s after it began, %s: "
             "unless it ends first, the job's end cuts it, and it is not committed; resume_path() keeps the "
             "save before\n",
             w.step, w.path.c_str(), seconds(steady_us() - w.began_us),
             end_ms > 0 ? ("and the job ends at " + clock_time(end_ms)).c_str()
                        : ("after waiting " + std::to_string(static_cast<long long>(waited)) + " s").c_str());
  }
  return left.size();
}

}  // namespace trainctl
