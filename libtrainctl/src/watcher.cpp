#include "beat_fields.hpp"
#include "build_id.hpp"
#include "controller_impl.hpp"
#include "deadline_fields.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "node_state_file.hpp"
#include "notice_fields.hpp"
#include "publisher_fields.hpp"
#include "sigbus_guard.hpp"
#include "state_dir.hpp"
#include "switch_fields.hpp"

namespace trainctl {

void controller::impl::open_state() {
  const std::string path = cfg.state_path.empty() ? default_state_path() : cfg.state_path;
  try {
    file = std::make_unique<node_state_file>(path);
    ns = &file->get();
    if (file->adopted())
      log_line(kLogWarning,
               "trainctl: node state %s was removed (systemd-logind's RemoveIPC=yes does this when the user's "
               "last login session on the node ends); this process (pid %d) shares its supervisor's open copy\n",
               path.c_str(), static_cast<int>(getpid()));
  } catch (const std::exception& e) {
    // A supervisor of another layout (a site's plugin and trainctl-run, a user's wheel)
    // made the file: say which two builds, not only that the file looks wrong. Under the
    // plugin the supervisor does not start the task, so the task has the plugin's build
    // (the supervisor of the plugin's package) in its environment instead.
    build_id supervisor;
    std::string said = env_text(kSupervisorBuildVar);
    const char* who = "this node's supervisor (trainctl-run)";
    if (!env_set(kSupervisorBuildVar)) {
      said = env_text(kPluginBuildVar);
      who = "this node's SPANK plugin (with its trainctl-run)";
    }
    const std::string mismatch =
        !said.empty() && parse_build(said, &supervisor) ? layout_mismatch(supervisor, who, "this rank's library") : "";
    if (!mismatch.empty())
      log_line(kLogWarning,
               "trainctl: %s. This process watches on its own: the deadline, notices and switches still reach it; "
               "the supervisor sees no heartbeat from it (no hang or straggler findings)\n",
               mismatch.c_str());
    else
      log_line(kLogWarning, "trainctl: %s; this process watches on its own (no sharing with other ranks on the node)\n",
               e.what());
    private_state = std::make_unique<node_state>();
    init_header(*private_state);
    ns = private_state.get();
  }
  const int slot = beat_fields::claim(state(), static_cast<std::int32_t>(getpid()));
  if (slot >= 0) {
    beat = &state().beats[slot];
    beat_fields::set_exiting(*beat, false);  // a new Controller has decided nothing yet
  } else {
    const std::string rank = env_or(env_var::kRank, "?");
    log_line(kLogWarning,
             "trainctl: the node state %s has heartbeat slots for %d rank processes, all taken: this process "
             "(rank %s, pid %d) is not watched for hangs on this node\n",
             path.c_str(), kMaxRanks, rank.c_str(), static_cast<int>(getpid()));
  }
}

// The shared state is damaged (truncated, overwritten): say so once, and go on with a
// private one, watching the switches and the deadline from this process. The damaged
// mapping stays mapped (zero pages after a truncation) until the controller ends, so
// a reader that still holds the old pointer reads (and writes) harmless zeros.
void controller::impl::fall_back_to_private(const std::string& why) {
  auto fresh = std::make_unique<node_state>();
  init_header(*fresh);
  deadline_fields::set_deadline(*fresh, known_deadline_ms);  // the damaged state's own may be zeros or junk
  std::lock_guard<std::recursive_mutex> hold(sw.mu);
  for (auto& s : sw.list) {
    s.slot = switch_fields::claim(*fresh, s.exit ? switch_kind::exit : switch_kind::save, s.name, s.path);
    if (!s.exit && s.slot >= 0) {
      // Touches from now on count on top of what this rank saved for; the file as it
      // is now was seen already.
      switch_fields::seed(*fresh, s.slot, switch_token(s.path), s.consumed);
      s.floor = s.consumed;
    }
  }
  log_line(kLogWarning,
           "trainctl: %s; this process ignores it and watches the switches and the deadline on its own from "
           "now on\n",
           why.c_str());
  // The heartbeat stays where it was: the rank's thread writes it without a lock, and
  // the supervisor reads it there for as long as it can.
  private_state = std::move(fresh);
  ns.store(private_state.get(), std::memory_order_release);
}

void controller::impl::on_supervisor_gone() {
  log_line(kLogWarning,
           "trainctl: the supervisor of this task is gone (killed or crashed): for SLURM the task has ended, so "
           "rank %d saves and exits as after a notice rather than run on outside the job's control (a save it "
           "is making now is that save)\n",
           cfg.rank);
  sup.gone.store(true, std::memory_order_release);
  local_bits.fetch_or(kFlagSignal, std::memory_order_release);
  sup.fd.reset();
}

void controller::impl::look_after_state(std::unique_ptr<node_role>& role, const publisher_options& popts) {
  events.flush(straggler_dir());
  // Once per process: the guard is the process's, and so is the handler that displaced it.
  static std::atomic<bool> told_rearm{false};
  if (rearm_sigbus_guard() && !told_rearm.exchange(true))
    log_line(kLogWarning,
             "trainctl: rank %d (pid %d): a SIGBUS handler was installed after trainctl's guard of the node state "
             "(as faulthandler.enable() does); the guard runs first again and passes other faults to it\n",
             cfg.rank, static_cast<int>(getpid()));
  if (file && ns.load(std::memory_order_relaxed) != private_state.get()) {
    const std::string damage = file->damage();
    if (!damage.empty()) {
      role.reset();
      fall_back_to_private(damage);
    }
  }
  node_state& n = state();
  const bool shared = file && &n != private_state.get();
  known_deadline_ms = deadline_fields::deadline_ms(n);
  if (!role) role = std::make_unique<node_role>(shared ? file.get() : nullptr, n, popts);
  const node_role::turn t = role->look();
  if (t.lost)  // another process took the role while this one was stopped or stuck: it follows
    log_line(kLogWarning, "trainctl: rank %d (pid %d) no longer publishes the node state: another process took over\n",
             cfg.rank, static_cast<int>(getpid()));
  if (t.taken_from != 0)
    log_line(kLogWarning,
             "trainctl: the node's publisher (pid %d) has not refreshed the node state %s for over %lld ms; rank %d "
             "(pid %d) publishes it from now on\n",
             t.taken_from, file->path().c_str(), static_cast<long long>(publisher_stale_after_ms(n)), cfg.rank,
             static_cast<int>(getpid()));
  if (!t.problem.empty())
    log_line(kLogWarning, "trainctl: %s; the node's other processes watch the switches\n", t.problem.c_str());
  if (sup.fd) {
    pollfd p{sup.fd.get(), POLLIN, 0};
    if (poll(&p, 1, 0) > 0) on_supervisor_gone();
  }
  // The deadline, whoever publishes: the supervisor writes it as soon as it knows it,
  // so a supervisor that died or stopped does not take it along.
  const std::int64_t now = unix_now_ms();
  for (const std::int64_t d : {local_deadline_ms.load(std::memory_order_acquire), deadline_fields::deadline_ms(n)})
    if (d > 0 && now >= d) local_bits.fetch_or(kFlagDeadline, std::memory_order_release);
  note_notices(n);
  const std::int64_t remove_at = sw.remove_at_ms.load(std::memory_order_acquire);
  if (remove_at != 0 && now >= remove_at) {
    std::lock_guard<std::recursive_mutex> hold(sw.mu);
    sw.remove_at_ms.store(0, std::memory_order_release);
    bool settled = true;
    for (const auto& s : sw.list)
      if (!s.exit) settled &= remove_consumed(s);
    if (!settled) retry_removal_soon();
  }
}

void controller::impl::retry_removal_soon() {
  sw.remove_at_ms.store(unix_now_ms() + cfg.poll_interval.count(), std::memory_order_release);
  wake();
}

void controller::impl::watch_loop() {
  std::unique_ptr<node_role> role;
  publisher_options popts;
  popts.poll_interval = cfg.poll_interval;
  popts.memory = cfg.memory;
  popts.gpu_memory = cfg.gpu;
  while (!watcher.stopping()) {
    look_after_state(role, popts);
    node_state& n = state();
    // Wake for the next deadline, and when the publisher's heartbeat would go stale.
    const std::int64_t now = unix_now_ms();
    std::chrono::milliseconds wait = role->until_stale(now, cfg.poll_interval);
    for (const std::int64_t d :
         {local_deadline_ms.load(std::memory_order_acquire), deadline_fields::deadline_ms(n), sw.remove_at_ms.load()})
      if (d > now) wait = std::min(wait, std::chrono::milliseconds(d - now));
    if (role->publishes()) {
      role->pub()->wait_and_refresh(watcher.fd(), wait);
    } else {
      pollfd fds[2] = {{watcher.fd(), POLLIN, 0}, {sup.fd.get(), POLLIN, 0}};
      poll(fds, sup.fd ? 2 : 1, static_cast<int>(wait.count()));
    }
    watcher.drain();
  }
}

// Only the touches already counted and saved for: a newer touch after the decision is
// kept for the next save (this node counts it, or its mtime is newer than the counted one).
bool controller::impl::remove_consumed(const local_switch& s) const {
  const node_state& n = state();
  const bool slot = s.slot >= 0 && has_header(n);
  const std::int64_t counted = slot ? switch_fields::token(n, s.slot) : s.initial;
  const std::int64_t now_token = switch_token(s.path);
  if (now_token == 0) return true;
  if (now_token > counted) return !slot;  // not counted here yet (without a slot nothing will count it)
  if (slot && switch_fields::count(n, s.slot) > s.consumed) return true;
  if (unlink(s.path.c_str()) != 0 && errno != ENOENT)
    log_line(kLogWarning, "trainctl: cannot remove %s %s after the save (%s); it will not trigger another save\n",
             s.name.c_str(), s.path.c_str(), std::strerror(errno));
  return true;
}

}  // namespace trainctl
