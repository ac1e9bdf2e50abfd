#include "beat_fields.hpp"
#include "breaker_fields.hpp"
#include "controller_impl.hpp"
#include "deadline_fields.hpp"
#include "env.hpp"
#include "notice_fields.hpp"
#include "publisher_fields.hpp"
#include "run_event_kinds.hpp"
#include "save_fields.hpp"

namespace trainctl {
namespace {

// A node's EndTime and the time its supervisor read it, in one vote element: seconds
// since kNewsEpochS, the read's above the low 32 bits and EndTime's in them, so that the
// MAX of the ranks' elements is the latest read (ties: the later EndTime). 0: none.
constexpr std::int64_t kNewsEpochS = 1'700'000'000;  // 2023-11-14; fits until 2091
std::int64_t pack_end_news(std::int64_t end_ms, std::int64_t read_ms) {
  const std::int64_t read_s = read_ms / 1000 - kNewsEpochS, end_s = end_ms / 1000 - kNewsEpochS;
  if (end_ms <= 0 || read_ms <= 0 || read_s <= 0 || end_s <= 0 || read_s >= (std::int64_t{1} << 31) ||
      end_s >= (std::int64_t{1} << 32))
    return 0;
  return (read_s << 32) | end_s;
}

// Under a supervisor the same signal reached it too (SLURM signals every process of the
// step), and it tells within its classification wait (2 s) what the signal means:
// preempted, the deadline, or a plain signal, through the node state's flags. A rank that
// acted on the raw signal at once would agree on "signal" at its next step, before the
// supervisor's answer (seen on a loaded machine: a preemption ended as reason signal).
// So a caught signal counts only once the supervisor had time to say; a supervisor that
// is gone is seen apart (on_supervisor_gone). Without a supervisor it counts at once.
constexpr std::int64_t kSupervisorClassifiesUs = 3'000'000;

}  // namespace

long world_size() {
  for (const char* name : {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    const std::string v = env_text(name);
    if (!v.empty()) return std::strtol(v.c_str(), nullptr, 10);
  }
  return 1;
}

bool controller::impl::caught_signal_counts() const noexcept {
  if ((g_signals_seen.load(std::memory_order_acquire) & sup.signal_mask) == 0) return false;
  if (!sup.present) return true;
  const std::int64_t now = steady_us();
  std::int64_t first = 0;
  if (sup.signal_caught_us.compare_exchange_strong(first, now)) first = now;
  return now - first >= kSupervisorClassifiesUs;
}

bool controller::should_exit() const noexcept {
  const impl& m = *impl_;
  return ((m.local_bits.load(std::memory_order_relaxed) | valid_flags(*m.ns.load(std::memory_order_relaxed))) &
          kExitMask) != 0 ||
         m.caught_signal_counts();
}

// vote() and decide() throw only for a vector shorter than kVoteLen, which this never
// passes.
bool controller::should_save() noexcept {  // NOLINT(bugprone-exception-escape)
  impl& m = *impl_;
  std::lock_guard<std::recursive_mutex> hold(m.sw.mu);
  bool pending = false;
  for (const auto& s : m.sw.list) pending |= !s.exit && m.token_of(s) > s.consumed;
  if (!pending) return false;
  std::int64_t local[kVoteLen] = {};
  m.fill_vote(local, kVoteLen);
  // Saves only: an exit decided here, from this process's view alone, would be latched
  // and make check() answer "exit" on a step where the other ranks agree on nothing.
  decision d;
  return m.consume_saves(0, local, d, false);
}

bool controller::vote(std::int64_t step, std::int64_t* v, std::size_t len) {
  if (len < kVoteLen)
    throw std::invalid_argument("trainctl: vote vector needs " + std::to_string(kVoteLen) + " elements");
  impl& m = *impl_;
  if (m.pos.save_started_us != 0) {
    // Gone before the save ended (it is seen only after the decision that began it: a
    // supervisor gone before that brought the exit there). Another save now would cost
    // as long again, in a task SLURM counts as ended, for a step or two of training.
    if (m.sup.gone.load(std::memory_order_acquire)) m.pos.saved_as_supervisor_went = true;
    m.end_of_save();
  }
  if (!m.pos.first_step_noted) {
    m.pos.first_step_noted = true;
    if (m.cfg.rank == 0) {
      // Where this run began, and what its resume_path() look could not trust: a task
      // that starts fresh although saves exist is named in `trainctl report`.
      run_event e = make_run_event(run_event_kind::kFirstStep, m.events.job(), unix_now_ms());
      e.step = step;
      const auto [resumed, untrusted] = last_resume_look();
      if (resumed > -2) e.figures = {{"resumed", resumed < 0 ? 0 : resumed + 1}, {"untrusted", untrusted}};
      const std::int64_t program = this_program_id();  // a sweep's tasks are told apart by it
      if (program >= 0) e.figures.emplace_back("program", program);
      m.events.note(e);
    }
    // The breaker: this run resumed no later than the array's last runs, which failed
    // without getting further. It votes to end here, at the first agreement.
    const std::int64_t armed = breaker_fields::armed_step(m.state());
    if (armed >= 0 && step <= armed) m.local_bits.fetch_or(kFlagNoProgress, std::memory_order_release);
  }
  m.pos.last_step = step;
  m.pos.last_check_ms = coarse_unix_ms();  // a few ns: the coarse clock is a memory read
  // Every call: a crash's step is this rank's own, not the last agreement's (two deaths
  // inside one agreement window are told apart).
  if (m.beat != nullptr) beat_fields::saw_step(*m.beat, step);
  m.fill_vote(v, len);
  const bool due = step % m.cfg.check_every == 0;
  if (!due) return false;
  if (m.beat != nullptr) {                            // the supervisor's hang detection reads these
    const std::int64_t now_ms = m.pos.last_check_ms;  // this call's time, read above
    // --hang-timeout=auto learns from the longest quiet time of a training rank.
    if (m.pos.quiet_since_ms != 0 && m.pos.open_phases.empty() && now_ms > m.pos.quiet_since_ms)
      beat_fields::learn_quiet_ms(m.state(), now_ms - m.pos.quiet_since_ms);
    m.pos.quiet_since_ms = now_ms;
    beat_fields::agreed(*m.beat, m.cfg.rank, now_ms);
  }
  if (m.cfg.straggler_factor > 0) m.timing.time_window(step, m.cfg.rank, &v[kVoteSlowest], &v[kVoteNegFastest]);
  return due;
}

// This process's view of every exit reason and switch, no step times.
void controller::impl::fill_vote(std::int64_t* v, std::size_t len) const {
  std::lock_guard<std::recursive_mutex> hold(sw.mu);
  std::fill(v, v + len, 0);
  const std::uint32_t bits = local_bits.load(std::memory_order_acquire) | valid_flags(state());
  for (const exit_reason& e : kExitReasons) v[e.vote] = (bits & e.flag) != 0;
  v[kVoteSignal] = v[kVoteSignal] != 0 || caught_signal_counts();
  v[kVoteNegFastest] = step_timing::kNoTime;
  const end_read end = deadline_fields::end_time(state());
  v[kVoteEndTime] = pack_end_news(end.end_ms, end.read_ms);
  v[kVoteSavedAsSupervisorWent] = pos.saved_as_supervisor_went;
  for (std::size_t i = 0; i < sw.list.size(); ++i) v[kVoteSwitch0 + i] = token_of(sw.list[i]);
}

// The latest EndTime read among the ranks' nodes (the agreement's kVoteEndTime): when it
// is later than this node's supervisor read and says another EndTime, this node's state
// takes it, and its deadline moves by as much. One rank of the node writes it and says
// so. A node whose supervisor was stopped (or is slow to read) when the TimeLimit was
// raised would otherwise fire the old deadline, and the whole job would exit early.
void controller::impl::learn_end_news(std::int64_t news) {
  if (news <= 0) return;
  const std::int64_t read_ms = ((news >> 32) + kNewsEpochS) * 1000;
  const std::int64_t end_ms = ((news & 0xffffffff) + kNewsEpochS) * 1000;
  std::int64_t known_end = 0;
  if (!deadline_fields::learn(state(), {end_ms, read_ms}, unix_now_ms(), &known_end)) return;
  wake();
  const auto clock_time = [](std::int64_t ms) {
    const time_t t = static_cast<time_t>(ms / 1000);
    tm parts{};
    char text[16] = "?";
    if (localtime_r(&t, &parts) != nullptr) std::strftime(text, sizeof text, "%H:%M:%S", &parts);
    return std::string(text);
  };
  // Not a fault by itself: each node's supervisor reads in a second of its own within
  // the poll period; a stopped one is one reason this node's read is later.
  log_line(kLogWarning,
           "trainctl: rank %d: EndTime moved to %s (%+lld s): another node's supervisor read it at %s, before "
           "this node's did; this node's deadline moves with it\n",
           cfg.rank, clock_time(end_ms).c_str(), static_cast<long long>((end_ms - known_end) / 1000),
           clock_time(read_ms).c_str());
}

decision controller::decide(std::int64_t step, const std::int64_t* r, std::size_t len) {
  if (len < kVoteLen)
    throw std::invalid_argument("trainctl: vote vector needs " + std::to_string(kVoteLen) + " elements");
  return impl_->decide(step, r, true);
}

void controller::impl::decide_exit(std::int64_t step, const std::int64_t* r) {
  impl& m = *this;
  std::string reason;
  auto first_switch = [&](bool kill) -> std::string {
    for (std::size_t i = 0; i < m.sw.list.size(); ++i) {
      const auto& s = m.sw.list[i];
      if (s.exit && r[kVoteSwitch0 + i] > 0 && (s.name == "kill-switch") == kill) return s.name;
    }
    return "";
  };
  reason = first_switch(true);
  for (const exit_reason& e : kExitReasons)
    if (reason.empty() && r[e.vote] != 0) reason = e.name;
  if (reason.empty()) reason = first_switch(false);
  if (reason.empty()) return;
  m.decided.exit = true;
  m.decided.reason = reason;
  bool saves = true;  // an exit switch's too
  for (const exit_reason& e : kExitReasons)
    if (reason == e.name) saves = e.saves;
  m.decided.saved = !saves || r[kVoteSavedAsSupervisorWent] != 0;
  m.local_bits.fetch_or(kFlagDecided, std::memory_order_release);
  // The notice before the exit it brought, on the timeline; a notice the ranks agreed
  // on counts though this node's supervisor may not have published it yet.
  std::uint32_t agreed_notices = 0;
  for (const exit_reason& e : kExitReasons)
    if (e.notice && r[e.vote] != 0) agreed_notices |= e.flag;
  m.note_notices(m.state(), agreed_notices);
  if (m.cfg.rank == 0 && reason == "no-progress")
    log_line(kLogWarning,
             "trainctl: exit at step %lld: no-progress: the array's last runs failed without getting past the "
             "step this one resumed at; it ends now, and the job with exit status 93 (the supervisor's log "
             "names them; TRAINCTL_NO_PROGRESS_RUNS=0 turns this off)\n",
             static_cast<long long>(step));
  else if (m.cfg.rank == 0 && m.decided.saved)
    log_line(kLogInfo,
             "trainctl: exit at step %lld: %s, without a save: a supervisor went away during the save the "
             "ranks just made, which is the last\n",
             static_cast<long long>(step), reason.c_str());
  else if (m.cfg.rank == 0)
    log_line(kLogInfo, "trainctl: exit at step %lld: %s\n", static_cast<long long>(step), reason.c_str());
}

decision controller::impl::decide(std::int64_t step, const std::int64_t* r, bool agreed) {
  impl& m = *this;
  std::lock_guard<std::recursive_mutex> hold(sw.mu);
  decision d;
  if (agreed) m.learn_end_news(r[kVoteEndTime]);
  if (!m.decided.exit) m.decide_exit(step, r);
  d.exit = m.decided.exit;
  d.saved = m.decided.saved;
  d.reason = m.decided.reason;
  m.pos.saved_as_supervisor_went = false;  // voted: it counts for the exit this agreement decides, or none
  m.consume_saves(step, r, d, agreed);
  // The loop saves now (on d.save, and on the first d.exit unless d.saved); the save ends
  // at its next call, or with the rank after an exit.
  if (d.save || (d.exit && !m.pos.exit_save_timed)) {
    const bool exit_save = d.exit && !m.pos.exit_save_timed;
    m.note_event(exit_save ? run_event_kind::kExit : run_event_kind::kSave, step, -1,
                 exit_save ? d.reason : d.save_reason);
    const bool saves = d.save || !d.saved;  // an exit without a save is no save's length
    if (saves) {
      m.pos.save_started_us = steady_us();
      m.show_phase(kPhaseSave);  // the hang clock gives the save its own budget
      if (m.beat != nullptr) save_fields::asked(*m.beat, step, unix_now_ms());  // what ctl.saved() should commit
    }
    m.pos.exit_save_timed = m.pos.exit_save_timed || d.exit;
    // The supervisor learns from an exit save the time limit cuts short (its beat is
    // this call's, the last this rank makes).
    if (exit_save && saves && m.beat != nullptr) beat_fields::set_exiting(*m.beat, true);
  }
  // An agreement the supervisor's hang flag (--hang-action=save-exit) reached ends the
  // window that held the stall: the report counts that time as hung, so it is neither a
  // slow step nor a straggler's price as well.
  const bool stalled = r[kVoteHang] != 0;
  if (m.cfg.rank == 0) m.timing.count_steps(step, d.save || d.exit || !m.pos.open_phases.empty(), stalled);
  if (m.cfg.straggler_factor > 0) {
    // Every rank sees the same reduced vector, so every rank counts the same strikes.
    const step_timing::verdict v = m.timing.judge(step, r[kVoteSlowest], r[kVoteNegFastest], stalled, m.cfg.rank,
                                                  {m.cfg.straggler_factor, m.cfg.straggler_agreements}, m.beat);
    if (v.report) m.report_straggler(step, v);
  }
  return d;
}

bool controller::impl::consume_saves(std::int64_t step, const std::int64_t* r, decision& d, bool agreed) {
  for (std::size_t i = 0; i < sw.list.size(); ++i) {
    auto& s = sw.list[i];
    const std::int64_t seen = r[kVoteSwitch0 + i];
    if (s.exit || seen <= s.consumed) continue;
    s.consumed = agreed ? seen : s.consumed + 1;
    if (!d.save) d.save_reason = s.name;
    d.save = true;
    if (cfg.rank != 0) continue;
    log_line(kLogInfo, "trainctl: save at step %lld: %s\n", static_cast<long long>(step), s.name.c_str());
    if (agreed || world_size() <= 1) {
      // By the watcher, at once: a stat and an unlink in the submit directory, which
      // may be a stalled mount, are no work for the training thread.
      sw.remove_at_ms.store(unix_now_ms(), std::memory_order_release);
      wake();
    } else {
      // Not agreed: ranks on other nodes may not have looked yet. The file goes once
      // every node's publisher has had a few polls to count it.
      // (publish_every_ms: a holder's interval of a trainctl before the heartbeat.)
      const std::int32_t every = publisher_fields::interval_ms(state());
      sw.remove_at_ms = unix_now_ms() + 3 * std::max<std::int64_t>(every, cfg.poll_interval.count());
      wake();
    }
  }
  return d.save;
}

decision controller::check(std::int64_t step, const reducer& reduce) {
  std::int64_t v[kVoteLen];
  const bool due = vote(step, v, kVoteLen);
  if (reduce) {
    if (!due) {
      decision d;
      d.exit = impl_->decided.exit;
      d.reason = impl_->decided.reason;
      return d;
    }
    reduce(v, kVoteLen);
    return impl_->decide(step, v, true);
  }
  return impl_->decide(step, v, false);
}

}  // namespace trainctl
