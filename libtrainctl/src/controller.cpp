#include "beat_fields.hpp"
#include "controller_impl.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "error_fields.hpp"
#include "node_names.hpp"
#include "notice_fields.hpp"
#include "publisher_fields.hpp"
#include "run_event_kinds.hpp"
#include "run_id.hpp"
#include "state_dir.hpp"
#include "straggler_fields.hpp"
#include "switch_fields.hpp"

namespace trainctl {
namespace {

pid_t parent_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos || paren + 4 > text.size()) return 0;
  return static_cast<pid_t>(std::strtol(text.c_str() + paren + 4, nullptr, 10));  // ") S PPID"
}

bool is_ancestor(pid_t pid) {
  pid_t p = getppid();
  for (int depth = 0; depth < 8 && p > 1; ++depth, p = parent_of(p))
    if (p == pid) return true;
  return false;
}

// The supervisor named by TRAINCTL_SUPERVISOR_PID, held by a pidfd (readable when it
// dies), if it is an ancestor of this process: a variable inherited from elsewhere,
// naming some other process, is ignored. None when there is none.
owned_fd open_supervisor_pidfd() {
  const long pid = std::strtol(env_text(env_var::kTrainctlSupervisorPid).c_str(), nullptr, 10);
  if (pid <= 1 || !is_ancestor(static_cast<pid_t>(pid))) return owned_fd();
  owned_fd fd(static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0)));
  if (!is_ancestor(static_cast<pid_t>(pid))) return owned_fd();  // it died and the pid was reused meanwhile
  if (fd) fcntl(fd.get(), F_SETFD, FD_CLOEXEC);
  return fd;
}

}  // namespace

controller::controller(const config& cfg) : impl_(std::make_unique<impl>(*cfg.impl_)) {
  impl& m = *impl_;
  m.open_state();
  if (env_set(env_var::kSlurmJobId)) m.events.write_to(own_run_events_path(), env_text(env_var::kSlurmJobId));
  if (!m.cfg.kill_switch.empty()) m.register_switch(true, "kill-switch", m.cfg.kill_switch);
  if (!m.cfg.save_switch.empty()) m.register_switch(false, "save-switch", m.cfg.save_switch);
  for (const auto& np : m.cfg.exit_switches) m.register_switch(true, np.name, np.path);
  for (const auto& np : m.cfg.save_switches) m.register_switch(false, np.name, np.path);
  m.local_deadline_ms.store(static_cast<std::int64_t>(m.cfg.deadline * 1000));
  if (m.cfg.deadline > 0 && unix_now_ms() >= static_cast<std::int64_t>(m.cfg.deadline * 1000))
    m.local_bits.fetch_or(kFlagDeadline);
  for (int sig : install_notice_handlers(m.cfg.signals))
    log_line(kLogWarning, "trainctl: cannot catch signal %s; it is ignored\n", signal_name(sig).c_str());
  for (int sig : m.cfg.signals) m.sup.signal_mask |= 1ull << (sig - 1);
  m.sup.fd = open_supervisor_pidfd();
  m.sup.present = static_cast<bool>(m.sup.fd);
  // A nudge: this rank is in the node state's heartbeat slots now, and its supervisor
  // starts watching it (its death seen the moment it happens) without polling the slots.
  // SIGCHLD: one the supervisor already listens for, which no user can choose as a notice
  // and whose default action is to ignore it.
  if (m.sup.fd && m.beat != nullptr) syscall(SYS_pidfd_send_signal, m.sup.fd.get(), SIGCHLD, nullptr, 0);
  m.watcher.start([&m] { m.watch_loop(); });
  // Where Yama restricts ptrace to ancestors (ptrace_scope 1), let the supervisor's own
  // children (eu-stack, gdb) read this process's native stack for the hang diagnosis.
  {
    const long pid = std::strtol(env_text(env_var::kTrainctlSupervisorPid).c_str(), nullptr, 10);
    if (pid > 1) prctl(PR_SET_PTRACER, static_cast<unsigned long>(pid), 0, 0, 0);  // EINVAL without Yama: fine
  }
}

controller::~controller() {
  impl& m = *impl_;
  // A rank ends after its writes (an asynchronous save), never past the job's end: what
  // is still pending then keeps its beat slot, where the supervisor names the cut save.
  std::size_t unwritten = m.writes.size();
  try {
    if (!m.writes_given_up.load(std::memory_order_acquire)) unwritten = wait_for_saves();
  } catch (...) {  // a line that could not be made: the rank ends as it would have
  }
  m.watcher.stop();
  remove_notice_handlers(m.cfg.signals);
  // Under a supervisor the notices come as USR1/USR2 (its relay, or scancel --signal). A
  // supervisor on a loaded node can hear of one after the ranks agreed to exit: its relay
  // then finds this rank past its loop, where the default action would kill it and
  // mpirun report the job failed (seen with 3 e2e tests side by side on 2 cores).
  if (m.sup.present) ignore_late_notices(m.cfg.signals);
  if (m.pos.save_started_us != 0 && m.decided.exit) m.end_of_save();  // the exit's save, made before this end
  if (m.pos.first_step_noted) m.note_step_times();
  // How long after its last check() the rank ended: a crash's teardown is no training.
  if (m.pos.first_step_noted)
    m.note_event(run_event_kind::kEnd, m.pos.last_step,
                 m.pos.last_check_ms != 0 ? loop_unix_ms() - m.pos.last_check_ms : -1, "");
  m.events.flush_at_end(m.straggler_dir());
  // A rank dying of the error it noted keeps its slot, as a crashed one does: its
  // supervisor reads the error there when it sees the death (the slot is claimed again
  // once the process is gone).
  if (m.beat != nullptr && !error_fields::noted(*m.beat) && unwritten == 0) beat_fields::release(*m.beat);
  if (m.sw.remove_at_ms.load() != 0) {  // this rank ends: the file must not start the next job with a save
    std::lock_guard<std::recursive_mutex> hold(m.sw.mu);
    for (const auto& s : m.sw.list)
      if (!s.exit) m.remove_consumed(s);
  }
  if (m.file) {
    m.file->release_publisher();  // another process takes over at once
    m.file->unlink_if_last();
    // Without a supervisor, the last rank of a node is the last to use its state: what
    // ranks killed before their own end left (stack files, a crashed step's state) goes
    // with it, in trainctl's own directory only (the default path's, state_dir(); never
    // one given by TRAINCTL_STATE).
    if (!m.sup.present && m.cfg.state_path.empty()) {
      const std::string& path = m.file->path();
      sweep_stale_state(path.substr(0, path.rfind('/')));
    }
  }
}

void controller::impl::register_switch(bool exit, const std::string& name, const std::string& path) {
  if (sw.list.size() >= kMaxLocalSwitches)
    throw std::invalid_argument("trainctl: too many switches (at most " + std::to_string(kMaxLocalSwitches) + ")");
  std::lock_guard<std::recursive_mutex> hold(sw.mu);
  local_switch s{exit, name, path};
  node_state& n = state();
  s.slot = switch_fields::claim(n, exit ? switch_kind::exit : switch_kind::save, name, path);  // shared or private
  if (s.slot < 0)
    log_line(kLogWarning, "trainctl: %s=%s: the node state has no free slot; only this process's first look counts\n",
             name.c_str(), path.c_str());
  // One stat at start, so a switch present before the job makes the first check exit,
  // whether or not the node's watcher has looked yet.
  s.initial = switch_token(path);
  if (exit && s.initial != 0) local_bits.fetch_or(kFlagExitSwitch, std::memory_order_release);
  if (!exit) {
    // A save switch present at the start counts as one request: the touch the node's
    // publisher counted last, or one it has not counted yet.
    const std::int64_t counted = s.slot >= 0 ? switch_fields::count(n, s.slot) : 0;
    const std::int64_t counted_token = s.slot >= 0 ? switch_fields::token(n, s.slot) : 0;
    const bool uncounted = s.initial != 0 && s.initial > counted_token;
    s.consumed = s.initial != 0 && !uncounted ? std::max<std::int64_t>(0, counted - 1) : counted;
    s.floor = uncounted ? counted + 1 : counted;
  }
  const std::string dir = dir_of(path);
  struct stat st {};
  if (stat(dir.c_str(), &st) != 0) {
    log_line(kLogWarning, "trainctl: %s=%s: directory %s: %s; checking for it every %s\n", name.c_str(), path.c_str(),
             dir.c_str(), std::strerror(errno), format_duration(cfg.poll_interval).c_str());
  } else if (access(dir.c_str(), X_OK) != 0) {
    log_line(kLogWarning, "trainctl: %s=%s: directory %s cannot be searched (%s); the switch cannot be seen\n",
             name.c_str(), path.c_str(), dir.c_str(), std::strerror(errno));
  }
  sw.list.push_back(std::move(s));
  notice_fields::changed(n);
  wake();
}

void controller::add_switch(bool exit, const std::string& name, const std::string& path) {
  config::impl probe;
  try {
    auto parsed = parse_named_paths(name + "=" + path);
    probe.set(exit ? "exit_switches" : "save_switches", parsed[0].name + "=" + parsed[0].path);
  } catch (const parse_error& e) {
    throw std::invalid_argument(std::string("trainctl: add_switch: ") + e.what());
  }
  const auto& np = exit ? probe.exit_switches[0] : probe.save_switches[0];
  impl_->register_switch(exit, np.name, np.path);
}

void controller::set_deadline(double unix_seconds) {
  if (unix_seconds < 0)
    throw std::invalid_argument("trainctl: deadline: negative; accepted: unix seconds, or 0 for none");
  impl_->local_deadline_ms.store(static_cast<std::int64_t>(unix_seconds * 1000), std::memory_order_release);
  impl_->local_bits.fetch_and(~static_cast<std::uint32_t>(kFlagDeadline), std::memory_order_release);
  if (unix_seconds > 0 && unix_now_ms() >= static_cast<std::int64_t>(unix_seconds * 1000))
    impl_->local_bits.fetch_or(kFlagDeadline, std::memory_order_release);
  impl_->wake();
}

void controller::set_rank(int rank) {
  if (rank < 0) throw std::invalid_argument("trainctl: rank: negative; accepted: 0 or more");
  impl_->cfg.rank = rank;
}

void controller::note_error(const std::string& text) {
  if (impl_->beat != nullptr) error_fields::note(*impl_->beat, text);
}

std::string controller::run_id() { return trainctl::run_id(env_text); }

const std::string& controller::state_path() const {
  static const std::string none = "(private)";
  return impl_->file ? impl_->file->path() : none;
}

void controller::compute_begin() noexcept { impl_->timing.compute_begin(); }

void controller::compute_end() noexcept { impl_->timing.compute_end(); }

void controller::impl::end_of_save() {
  const std::int64_t ms = (steady_us() - pos.save_started_us) / 1000;
  pos.save_started_us = 0;
  note_event(run_event_kind::kSaved, -1, ms, "");
  beat_fields::learn_save_ms(state(), ms);
  show_phase(current_phase());
}

void controller::impl::show_phase(std::int32_t phase) {
  pos.quiet_since_ms = coarse_unix_ms();
  if (beat == nullptr) return;
  beat_fields::show_phase(*beat, phase, pos.quiet_since_ms);
}

void controller::phase_begin(const std::string& name) {
  if (!beat_fields::valid_phase_name(name))
    throw std::invalid_argument("trainctl: phase name '" + name +
                                "': accepted: 1 to 31 of letters, digits, '_', '.', '-' (not first), e.g. eval");
  impl& m = *impl_;
  m.timing.mark_busy();  // its time is no step's
  std::int32_t phase = kPhaseSave;
  // The loop's own save is a save on `trainctl report`'s timeline too (inside one trainctl
  // asked for, it only ends that one more precisely).
  if (name == "save" && m.pos.save_started_us == 0) m.note_event(run_event_kind::kSave, m.pos.last_step, -1, "loop");
  if (name != "save") {
    const int slot = beat_fields::claim_phase(m.state(), name);
    phase = kPhaseNamed + (slot >= 0 ? slot : kMaxPhases);  // past the table: judged without a learnt budget
    if (slot < 0 && !m.pos.phase_slots_full_said) {
      m.pos.phase_slots_full_said = true;
      log_line(kLogWarning,
               "trainctl: phase '%s': the node state holds %d phase names, all taken: its duration is not "
               "learnt (a hang in it is judged by the first-time budget)\n",
               name.c_str(), kMaxPhases);
    }
  }
  if (name == "restore" && m.pos.restore_at == SIZE_MAX) m.pos.restore_at = m.pos.open_phases.size();
  m.pos.open_phases.emplace_back(phase, steady_us());
  m.show_phase(m.current_phase());
}

void controller::phase_end() {
  impl& m = *impl_;
  if (m.pos.open_phases.empty()) throw std::invalid_argument("trainctl: phase_end() without an open phase");
  const auto [phase, began_us] = m.pos.open_phases.back();
  m.pos.open_phases.pop_back();
  const std::int64_t ms = (steady_us() - began_us) / 1000;
  node_state& ns = m.state();
  if (phase == kPhaseSave) {
    m.note_event(run_event_kind::kSaved, -1, ms, "");
    beat_fields::learn_save_ms(ns, ms);
  } else {
    beat_fields::learn_phase_ms(ns, phase - kPhaseNamed, ms);  // past the table: nothing to learn
  }
  if (m.pos.open_phases.size() == m.pos.restore_at) {
    m.pos.restore_at = SIZE_MAX;
    m.note_event(run_event_kind::kRestore, m.pos.last_step, ms, "");
  }
  m.show_phase(m.current_phase());
}

void controller::impl::note_event(const char* what, std::int64_t step, std::int64_t took_ms,
                                  const std::string& reason) {
  if (cfg.rank == 0) events.note(what, step, took_ms, reason);
}

// Each notice once, as the watcher sees it (within a poll interval), or the rank's
// thread at an exit it brings: a mark on the report's timeline. Whichever node's
// supervisor raised it, rank 0's node state has it in time, or the ranks' agreement on
// it does (`agreed`): the exit may come from another node's vote before this node's
// supervisor has published the notice.
void controller::impl::note_notices(const node_state& n, std::uint32_t agreed) {
  if (cfg.rank != 0 || !events.on()) return;
  std::uint32_t flags = valid_flags(n) | local_bits.load(std::memory_order_acquire) | agreed;
  // A signal the rank caught is a notice of its own only without a supervisor: with one,
  // it is the supervisor's relay of a notice its flags already tell.
  if (!sup.present && (g_signals_seen.load(std::memory_order_acquire) & sup.signal_mask) != 0) flags |= kFlagSignal;
  events.note_notices(flags);
}

// Rank 0's step times in the run events as it ends: `trainctl report` flags the outliers.
void controller::impl::note_step_times() {
  if (cfg.rank != 0 || !events.on() || timing.step_counts().steps() == 0) return;
  const step_time_summary s = timing.step_counts().summary();
  run_event e = make_run_event(run_event_kind::kStepTimes, events.job(), unix_now_ms());
  e.figures = {{"steps", s.steps},
               {"median_us", s.median_us},
               {"mad_us", s.mad_us},
               {"outliers", s.outlier_steps},
               {"excess_us", s.excess_us}};
  events.note(e);
}

// A straggler's episode begins: rank 0 says it in the log; the straggler itself says so
// on its own stderr and puts the finding in its heartbeat slot, where it runs (host,
// GPUs); the node's supervisor writes slow_nodes and the bad-node memory from there
// (without one, this process's watcher thread does). The training thread opens nothing.
void controller::impl::report_straggler(std::int64_t step, const step_timing::verdict& v) {
  const int straggler = v.straggler, strikes = v.strikes;
  const std::int64_t slowest_us = v.slowest_us, fastest_us = v.fastest_us;
  const double factor = static_cast<double>(slowest_us) / static_cast<double>(fastest_us);
  if (cfg.rank == 0 && straggler != 0)
    log_line(kLogWarning,
             "trainctl: straggler at step %lld: rank %d takes %.1f ms per step, the fastest rank %.1f ms (x%.2f), "
             "%d agreements in a row\n",
             static_cast<long long>(step), straggler, slowest_us / 1000.0, fastest_us / 1000.0, factor, strikes);
  if (straggler != cfg.rank) return;
  const bool by_supervisor =
      beat != nullptr && &state() != private_state.get() && publisher_fields::supervised(state());
  log_line(kLogWarning,
           "trainctl: straggler at step %lld: this rank (%d) on %s takes %.1f ms per step, the fastest rank %.1f "
           "ms (x%.2f); %s\n",
           static_cast<long long>(step), cfg.rank, node_name().c_str(), slowest_us / 1000.0, fastest_us / 1000.0,
           factor, by_supervisor ? "the node's supervisor records it in slow_nodes" : "recorded in slow_nodes");
  if (by_supervisor) {
    straggler_fields::report(*beat, step, slowest_us, fastest_us);
    // Woken now, as for a new rank: the finding is written before this rank may end.
    if (sup.fd) syscall(SYS_pidfd_send_signal, sup.fd.get(), SIGCHLD, nullptr, 0);
    return;
  }
  straggler_finding f;
  f.rank = cfg.rank;
  f.job = events.job().empty() ? "-" : events.job();
  f.step = step;
  f.slow_us = slowest_us;
  f.fastest_us = fastest_us;
  events.queue_straggler(f);
}

// Where slow_nodes goes: log_dir, else $SLURM_SUBMIT_DIR, else the working directory.
std::string controller::impl::straggler_dir() const {
  std::string dir = cfg.log_dir;
  if (dir.empty()) dir = env_text(env_var::kSlurmSubmitDir);
  return dir.empty() ? "." : dir;
}

int controller::check_every() const { return impl_->cfg.check_every; }

std::uint64_t controller::stat_calls() const { return publisher_fields::stat_calls(impl_->state()); }

}  // namespace trainctl
