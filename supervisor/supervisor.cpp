#include "supervisor.hpp"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>

#include "bad_nodes.hpp"
#include "deadline_tracker.hpp"
#include "graceful_auto.hpp"
#include "no_progress.hpp"
#include "node_health.hpp"
#include "node_role.hpp"
#include "node_state.hpp"
#include "notice_hook.hpp"
#include "parse.hpp"
#include "publisher.hpp"
#include "query_schedule.hpp"
#include "ranks.hpp"
#include "run_end.hpp"
#include "run_events.hpp"
#include "run_progress.hpp"
#include "slurm_api.hpp"
#include "slurm_job.hpp"
#include "stack_dump.hpp"
#include "task_processes.hpp"

namespace trainctl {
namespace {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long a notice signal waits for the controller's answer (is this a preemption?)
// before it is relayed as a plain signal.
constexpr milliseconds kNoticeClassifyWait{2000};
// How long an idle follower (a supervisor that does not publish the node state) sleeps:
// the publisher's death wakes it at once (a pidfd), the deadline at its time.
constexpr milliseconds kFollowerWait{60000};
// A TERM this close to the known EndTime is the time limit, not a preemption: no query.
constexpr std::int64_t kAtEndTimeMs = 5000;

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

class supervisor {
 public:
  supervisor(const supervisor_options& o)
      : opts_(o),
        hook_(o.on_notice, o.on_notice_timeout, o.shield, [this](const std::string& line) { log("%s", line.c_str()); }),
        health_(
            o, [this](const std::string& line) { log("%s", line.c_str()); },
            [this](const std::string& summary) { after_hang_dump(summary); }),
        end_(o, [this](const std::string& line) { log("%s", line.c_str()); }),
        procs_(
            o, [this](pid_t p) { return is_helper(p); }, [this](const std::string& line) { log("%s", line.c_str()); }),
        dl_(
            unix_now_ms, [this](std::int64_t limit_s) { return graceful_exit(limit_s); }, slots_from_env(o.job_id),
            o.endtime_poll.count()) {
    health_.set_owned_elsewhere([this](pid_t p) { return hook_.owns(p) || p == query_.pid(); });
    health_.set_records([this] { return publishes(); });
  }
  int run(char* const* argv, pid_t adopt);

 private:
  void log(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  void open_state();
  int pick_log_fd() const;
  void take_publisher_role();
  void handle_signal(const signalfd_siginfo& si);
  void reap();
  void start_query(const char* why);
  void on_job_answer(const std::optional<job_times>& jt, const std::string& error);
  void resolve_notice(const char* why);
  void publish_deadline();
  void set_end_time(std::int64_t end, std::int64_t limit_s, bool moved);
  void deadline_moved();
  void adopt_end_news();
  void look_after_state();
  void fire(std::uint32_t flag, const char* why);
  void run_hook(std::uint32_t flag);
  void follow_node_flags();
  void check_deadline();
  void kill_ranks();
  // The supervisor's own helpers: the hook, a stacks or evidence child, a query.
  bool is_helper(pid_t p) const { return hook_.owns(p) || health_.owns(p) || p == query_.pid(); }
  void after_hang_dump(const std::string& summary);
  // The loop's one descriptor: the signals and the ranks' deaths (node health).
  int loop_fd();
  void close_state();
  void watch_publisher();
  bool tracks_endtime() const { return !opts_.job_id.empty() && opts_.graceful_exit.count() != 0; }
  bool graceful_is_auto() const { return opts_.graceful_exit == option::kGracefulExitAuto; }
  // The graceful exit for a time limit (auto: learnt), and why (auto only); none without
  // --graceful-exit.
  std::optional<graceful_exit_value> graceful_exit(std::int64_t limit_s) const;
  void learn_save_time();
  void learn_cut_save();
  // Whether this supervisor reads EndTime and preemption itself: always, unless another
  // supervisor on the node publishes them into a node state this one shares. No node
  // state problem (a refused file, a lock held by a rank) may cost a notice.
  bool reads_job_itself() const {
    return publishes() || !state_ || state_->get().supervised.load(std::memory_order_acquire) == 0;
  }

  supervisor_options opts_;
  notice_hook hook_;
  node_health health_;
  int loop_fd_ = -1;  // epoll: sigfd_ and health_.death_fd()
  std::unique_ptr<node_state_file> state_;
  std::unique_ptr<node_role> role_;  // with state_: whether this supervisor publishes it
  bool publishes() const { return role_ && role_->publishes(); }
  int sigfd_ = -1;
  run_end end_;
  task_processes procs_;
  deadline_tracker dl_;
  bool state_removed_said_ = false;
  bool preempted_ = false;
  std::uint32_t seen_flags_ = 0;         // node flags already relayed (followers)
  bool term_seen_ = false;               // a TERM came: the batch end asks whether it was a preemption
  job_query query_;                      // the EndTime query in flight, if any
  std::string query_why_;                // what it is for, for the log
  bool notice_pending_ = false;          // a notice signal waits for the query to say what it is
  clock::time_point notice_by_{};        // relayed as a plain signal then at the latest
  bool job_ending_ = false;              // the controller says the job is no longer RUNNING
  mutable int log_fd_ = -1;              // see pick_log_fd
  std::unique_ptr<graceful_auto> auto_;  // --graceful-exit=auto
};

void supervisor::log(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (log_fd_ < 0) log_fd_ = pick_log_fd();
  dprintf(log_fd_, "%s: %s\n", opts_.log_prefix.c_str(), buf);
}

// Where the log lines go: stderr, unless nobody reads it: /dev/null, or the step of an
// MPI daemon (Open MPI's orted, PRRTE's prted), whose srun mpirun starts with its output
// thrown away. Then the job's own error file, appended, so that what trainctl did on
// every node reaches the job log. Decided once, at the first line.
int supervisor::pick_log_fd() const {
  struct stat st {};
  const bool devnull = fstat(2, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
  std::string cmd;
  if (procs_.child() > 0) {
    std::ifstream in("/proc/" + std::to_string(procs_.child()) + "/cmdline");
    std::getline(in, cmd, '\0');
    cmd = cmd.substr(cmd.rfind('/') + 1);
  }
  if ((!devnull && cmd != "orted" && cmd != "prted") || opts_.job_id.empty()) return 2;
  const auto job = scontrol_show("job", opts_.job_id, milliseconds(5000), nullptr);
  for (const char* key : {"StdErr", "StdOut"}) {
    const std::string path = job ? scontrol_field(*job, key) : "";
    if (path.empty() || path[0] != '/') continue;
    const int fd = open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) return fd;
  }
  return 2;
}

void supervisor::open_state() {
  if (opts_.state_path.empty()) {
    std::string note;
    state_dir(&note);
    if (!note.empty()) log("%s", note.c_str());
  }
  const std::string path = opts_.state_path.empty() ? default_state_path() : opts_.state_path;
  try {
    state_ = std::make_unique<node_state_file>(path);
  } catch (const std::exception& e) {
    log("%s; the ranks still get every notice as SIG%s, and each rank watches the switches on its own", e.what(),
        signal_name(opts_.graceful_signal).c_str());
    return;
  }
  setenv("TRAINCTL_STATE", path.c_str(), 1);
  // Where a rank started after the file was removed finds it (node_state_file::adopted).
  setenv("TRAINCTL_STATE_FD", std::to_string(state_->fd()).c_str(), 1);
  if (!opts_.kill_switch.empty()) state_->register_switch(switch_kind::exit, "kill-switch", opts_.kill_switch);
  if (!opts_.save_switch.empty()) state_->register_switch(switch_kind::save, "save-switch", opts_.save_switch);
  publisher_options po;
  po.poll_interval = opts_.poll_interval;
  po.inotify_after = milliseconds(1000);
  role_ = std::make_unique<node_role>(state_.get(), state_->get(), po);
  take_publisher_role();
}

void supervisor::take_publisher_role() {
  if (!role_) return;
  const node_role::turn t = role_->look();
  if (t.lost)
    log("another process took over publishing the node state while this supervisor was stopped or busy; it "
        "relays notices and follows the node state now");
  if (!t.problem.empty()) log("%s; this supervisor still relays every notice itself", t.problem.c_str());
  if (!t.took) return;
  if (t.taken_from != 0)
    log("the node's publisher (pid %d) stopped refreshing the node state; this supervisor publishes it now",
        t.taken_from);
  // A follower that takes over goes on from the deadline its predecessor published and
  // reads EndTime in its own slot of the period: a takeover costs the controller nothing.
  const std::int64_t published = state_->get().deadline_ms.load(std::memory_order_acquire);
  dl_.adopt(published);
  if (dl_.next_read_ms() != 0 && published != 0) dl_.schedule_periodic_read();
  state_->get().supervised.store(1);
}

void supervisor::reap() {
  while (true) {
    int status = 0;
    const pid_t p = waitpid(-1, &status, WNOHANG);
    if (p <= 0) break;
    if (hook_.reaped(p, status) || health_.reaped(p, status)) continue;
    if (query_.running() && p == query_.pid()) {
      std::string error;
      const auto jt = query_.finish(status, &error);
      on_job_answer(jt, error);
      continue;
    }
    procs_.reaped(p, status);
  }
}

void supervisor::fire(std::uint32_t flag, const char* why) {
  if (state_) {
    state_->get().flags.fetch_or(flag, std::memory_order_release);
    state_->get().seq.fetch_add(1, std::memory_order_release);
    seen_flags_ |= flag;
  }
  procs_.signal_ranks(why);
  health_.trainctl_ended_ranks();  // a failure after a notice is no crash
  procs_.told_to_exit(flag & kFlagPreempted  ? "preempted"
                      : flag & kFlagDeadline ? "deadline"
                      : flag & kFlagHang     ? "hang"
                      : flag & kFlagPeer     ? "peer-failed"
                                             : "signal");
  run_hook(flag);
}

void supervisor::run_hook(std::uint32_t flag) {
  if (flag & kFlagHang) return;  // on_hang runs the hook itself, with the summary
  const char* kind = flag & kFlagPreempted  ? "preempted"
                     : flag & kFlagDeadline ? "deadline"
                     : flag & kFlagPeer     ? "peer-failed"
                                            : "signal";
  hook_.notice(kind, dl_.deadline_ms(), dl_.end_ms(), "");
}

// Starts a read of EndTime and preemption unless one is in flight; the answer comes
// to on_job_answer when the loop reaps the query.
void supervisor::start_query(const char* why) {
  if (opts_.job_id.empty() || !reads_job_itself() || query_.running()) return;
  // The batch step usually only runs srun; the steps' supervisors ask the controller.
  // It asks only while the batch script itself runs rank processes, which keeps the
  // controller load at one supervisor per node.
  dl_.schedule_periodic_read();
  if (opts_.batch && find_ranks(getpid(), opts_.launchers, false).empty()) return;
  std::vector<int> ignore = opts_.notices;
  ignore.push_back(opts_.graceful_signal);
  std::string error;
  query_why_ = why;
  if (!query_.start(opts_.job_id, milliseconds(10000), ignore, &error)) {
    on_job_answer(std::nullopt, error);
    return;
  }
  if (std::getenv("TRAINCTL_LOG_QUERIES") != nullptr)  // for the RPC tests
    log("asked the controller for the job's EndTime (%s, through %s) at %lld ms", why, query_.how(),
        static_cast<long long>(unix_now_ms()));
}

void supervisor::on_job_answer(const std::optional<job_times>& jt, const std::string& error) {
  const std::string fallback = query_.take_fallback_note();
  if (!fallback.empty()) log("EndTime is read through scontrol, not libslurm: %s", fallback.c_str());
  if (!jt) {
    log("could not read the job's EndTime (%s): %s; keeping %s", query_why_.c_str(), error.c_str(),
        dl_.end_ms() ? format_slurm_timestamp(dl_.end_ms()).c_str() : "no deadline");
    if (notice_pending_) resolve_notice("notice");
    return;
  }
  if (jt->start_ms > 0) hook_.set_run_start(jt->start_ms);
  if (jt->preempting && !preempted_) {
    preempted_ = true;
    log("the job is being preempted (EndTime now %s)", format_slurm_timestamp(jt->end_ms).c_str());
    // For the batch step's supervisor on this node, which SLURM may not signal at a
    // preemption: at its script's end it asks the controller only when told so.
    try {
      claim_once(preempted_marker(opts_.job_id));
    } catch (const std::exception& e) {
      log("%s: the batch step may not requeue the job", e.what());
    }
    fire(kFlagPreempted, "preempted");
  }
  // At the job's end slurmctld stamps EndTime with the moment of the kill: that is no
  // extension, and no deadline follows from it.
  const bool running = jt->state.empty() || jt->state == "RUNNING";
  if (!running && !job_ending_) {
    job_ending_ = true;
    log("the job is ending (JobState=%s)", jt->state.c_str());
  }
  if (jt->end_ms == 0 && dl_.end_ms() != 0)
    log("EndTime read as unknown (%s); keeping %s", query_why_.c_str(), format_slurm_timestamp(dl_.end_ms()).c_str());
  if (running && jt->end_ms != 0 && dl_.take_read(unix_now_ms())) {
    if (jt->end_ms != dl_.end_ms()) {
      const bool moved = dl_.end_ms() != 0;
      if (moved)
        log("EndTime moved from %s to %s (TimeLimit %lld s)", format_slurm_timestamp(dl_.end_ms()).c_str(),
            format_slurm_timestamp(jt->end_ms).c_str(), static_cast<long long>(jt->limit_s));
      set_end_time(jt->end_ms, jt->limit_s, moved);
    }
    publish_deadline();  // the read's time too: the ranks pass the freshest read on
  }
  if (notice_pending_) resolve_notice("notice");
}

// The deadline from a new EndTime (read by this supervisor, or by another node's and
// passed on by the ranks): logged, published, and the last read before it scheduled.
void supervisor::set_end_time(std::int64_t end, std::int64_t limit_s, bool moved) {
  const std::optional<deadline_move> m = dl_.set_end(end, limit_s);
  if (!m) return;
  publish_deadline();
  const std::string& why = m->graceful.why;
  const milliseconds graceful = m->graceful.graceful;
  log("deadline %s (EndTime %s - graceful exit %s)", format_slurm_timestamp(m->deadline_ms).c_str(),
      format_slurm_timestamp(m->end_ms).c_str(),
      why.empty() ? format_duration(graceful).c_str() : ("auto: " + why).c_str());
  const std::string left = format_duration(std::chrono::seconds(m->left_ms / 1000));
  // Why the deadline is already past decides what the line says: only a first read is
  // the options' doing.
  if (m->past && (preempted_ || moved))
    log("%s left %s to EndTime, less than the graceful exit (%s): the ranks are told to save and exit now",
        preempted_ ? "the preemption" : "the moved EndTime", left.c_str(), format_duration(graceful).c_str());
  else if (m->past)
    log("the graceful exit (%s) is not shorter than the time left (%s of a %s time limit): the ranks are told to "
        "save and exit now; give a shorter --graceful-exit (GRACEFUL_EXIT in the template) or a longer --time",
        format_duration(graceful).c_str(), left.c_str(),
        dl_.limit_s() > 0 ? format_duration(std::chrono::seconds(dl_.limit_s())).c_str() : "unknown");
}

// A fresher EndTime than this supervisor read, in the node state: another node's
// supervisor read it, and the ranks' agreement carried it here (controller.cpp,
// learn_end_news). A node whose supervisor was stopped when the TimeLimit was raised
// would otherwise fire the old deadline on waking, and its ranks with it.
void supervisor::adopt_end_news() {
  if (!state_ || dl_.end_ms() == 0 || !tracks_endtime()) return;  // a follower: its publisher's to follow
  const node_state& ns = state_->get();
  const std::int64_t read = ns.end_read_ms.load(std::memory_order_acquire);
  const std::int64_t end = ns.end_ms.load(std::memory_order_acquire);
  if (read <= dl_.end_read_ms() || end == 0 || end == dl_.end_ms()) return;
  log("EndTime moved from %s to %s: read at %s by another node's supervisor and passed on by the ranks, before "
      "this supervisor's own read",
      format_slurm_timestamp(dl_.end_ms()).c_str(), format_slurm_timestamp(end).c_str(),
      format_slurm_timestamp(read).c_str());
  dl_.take_read(read);
  set_end_time(end, -1, true);
}

std::optional<graceful_exit_value> supervisor::graceful_exit(std::int64_t limit_s) const {
  if (opts_.graceful_exit.count() == 0) return std::nullopt;
  if (!graceful_is_auto()) return graceful_exit_value{opts_.graceful_exit, ""};
  const auto_graceful a = auto_ ? auto_->current(limit_s) : auto_graceful_exit(0, 0);
  return graceful_exit_value{a.graceful, a.why};
}

// --graceful-exit=auto: a save longer than any known moves the deadline (earlier: the
// next save gets the time this one needed; later, when it replaces the first task's
// guess), and the node's publisher records it for the next task of the array. A
// deadline already fired stays fired.
void supervisor::learn_save_time() {
  if (!auto_ || !state_) return;
  const std::int64_t save_ms = state_->get().longest_save_ms.load(std::memory_order_relaxed);
  if (save_ms <= auto_->longest_ms()) return;
  std::string problem;
  auto_->saw(save_ms, publishes(), &problem);
  if (!problem.empty()) log("cannot remember the save time for the next task: %s", problem.c_str());
  if (dl_.end_ms() == 0 || dl_.fired() || procs_.done()) {
    log("a save took %.1f s: graceful exit %s from now on", static_cast<double>(save_ms) / 1000.0,
        dl_.graceful().why.c_str());
    return;
  }
  const std::optional<deadline_move> m = dl_.regrace();
  if (!m) return;
  publish_deadline();
  if (publishes()) role_->pub()->set_deadline_ms(m->deadline_ms);
  log("a save took %.1f s: deadline now %s (EndTime %s - graceful exit auto: %s)",
      static_cast<double>(save_ms) / 1000.0, format_slurm_timestamp(m->deadline_ms).c_str(),
      format_slurm_timestamp(m->end_ms).c_str(), m->graceful.why.c_str());
}

// --graceful-exit=auto and a save cut short (SIGTERM: the time limit, a preemption's
// end, scancel): a rank that reached the exit (its beat slot says so) and still runs
// has been saving since that agreement, which no longest_save_ms records. The
// longest such time is a lower bound of this array's saves, learnt as a save of that
// length, so the next task leaves more. A rank that never agreed after the exit (still
// starting, hung) teaches nothing.
void supervisor::learn_cut_save() {
  if (!auto_ || !state_ || procs_.told_ms() == 0) return;
  const node_state& ns = state_->get();
  const std::int64_t now = unix_now_ms();
  // A rank that decided the exit marked its beat slot (exiting) at that call, whose
  // beat is the last it made: it has been saving (or ending) since then.
  std::int64_t cut_ms = 0;
  for (const rank_beat& b : ns.beats) {
    const std::int32_t pid = b.pid.load(std::memory_order_acquire);
    const std::int64_t beat = b.beat_ms.load(std::memory_order_acquire);
    if (pid <= 0 || b.exiting.load(std::memory_order_acquire) == 0 || beat <= 0 || beat > now || kill(pid, 0) != 0)
      continue;
    cut_ms = std::max(cut_ms, now - beat);
  }
  if (cut_ms <= auto_->longest_ms()) return;
  std::string problem;
  auto_->saw(cut_ms, publishes(), &problem);
  log("a save was cut short after %.1f s (the ranks were told to exit: %s; one still saved at SIGTERM): the next "
      "task of the array leaves %s",
      static_cast<double>(cut_ms) / 1000.0, procs_.told_why().c_str(), dl_.graceful().why.c_str());
  if (!problem.empty()) log("cannot remember the save time for the next task: %s", problem.c_str());
}

// A notice signal is relayed once the controller said whether it is a preemption (then
// it already went out as one), or after kNoticeClassifyWait without an answer.
void supervisor::resolve_notice(const char* why) {
  notice_pending_ = false;
  if (!preempted_)
    fire(kFlagSignal, why);
  else
    procs_.signal_ranks(why);
}

// The deadline goes into the node state as soon as it is known, so that whoever
// publishes (or a rank whose supervisor stopped) fires it on time.
void supervisor::publish_deadline() {
  if (!state_) return;
  node_state& ns = state_->get();
  // Never a staler EndTime over a fresher one the ranks brought (adopt_end_news takes
  // that one at this supervisor's next wake).
  if (ns.end_read_ms.load(std::memory_order_acquire) > dl_.end_read_ms() &&
      ns.end_ms.load(std::memory_order_acquire) != dl_.end_ms())
    return;
  ns.end_ms.store(dl_.end_ms(), std::memory_order_release);
  ns.end_read_ms.store(dl_.end_read_ms(), std::memory_order_release);
  ns.deadline_ms.store(dl_.deadline_ms(), std::memory_order_release);
  ns.seq.fetch_add(1, std::memory_order_release);
}

void supervisor::check_deadline() {
  // One last read shortly before, for a TimeLimit changed since the periodic one; the
  // deadline itself never waits for an answer.
  if (tracks_endtime() && dl_.take_pre_deadline_read()) start_query("before the deadline");
  const std::optional<std::string> why = dl_.fire_if_due();
  if (!why) return;
  if (publishes()) role_->pub()->set_deadline_ms(dl_.deadline_ms());
  fire(kFlagDeadline, why->c_str());
}

void supervisor::handle_signal(const signalfd_siginfo& si) {
  const int sig = static_cast<int>(si.ssi_signo);
  if (sig == SIGCHLD) {  // also a rank's nudge: it took a heartbeat slot (node health looks this turn)
    reap();
    return;
  }
  if (std::find(opts_.notices.begin(), opts_.notices.end(), sig) != opts_.notices.end() ||
      sig == opts_.graceful_signal) {
    log("received SIG%s (from pid %u)", signal_name(sig).c_str(), si.ssi_pid);
    if (sig == SIGTERM) {
      procs_.report_lingering(", when SIGTERM came");
      learn_cut_save();
    }
    if (notice_pending_) return;  // the one before is still waiting for its answer
    if (sig == SIGTERM && !term_seen_) {
      // SLURM ends a step's other tasks with TERM when one fails (srun --kill-on-bad-exit;
      // 26.05 sends TERM before KILL): that is a peer's death, no time limit or preemption.
      const std::string peer = health_.peer_death();
      if (!peer.empty()) {
        term_seen_ = true;
        log("SIGTERM came when %s: a task of this step failed and SLURM ends the others (srun --kill-on-bad-exit), "
            "not a time limit or a preemption; the ranks save if they still can (reason peer-failed)",
            peer.c_str());
        fire(kFlagPeer, "peer-failed");
        return;
      }
    }
    // Only a TERM can be a preemption (SLURM sends it at the start of the grace, with
    // the user's signal if any), and one at the known EndTime is the time limit: any
    // other notice (scancel --signal, --signal=SIG@TIME) leaves EndTime where it was.
    const bool may_be_preemption = sig == SIGTERM && (dl_.end_ms() == 0 || unix_now_ms() < dl_.end_ms() - kAtEndTimeMs);
    if (sig == SIGTERM) term_seen_ = true;
    if (may_be_preemption) start_query("after the signal");  // preemption moves EndTime and sets PreemptTime
    if (query_.running()) {
      notice_pending_ = true;
      notice_by_ = clock::now() + kNoticeClassifyWait;
    } else {
      resolve_notice("notice");
    }
    check_deadline();
    return;
  }
  health_.trainctl_ended_ranks();                     // a failure after a termination signal is no crash
  if (procs_.child() > 0) kill(procs_.child(), sig);  // INT, HUP, QUIT: passed on as they are
}

void supervisor::follow_node_flags() {
  if (!state_ || publishes()) return;
  const std::uint32_t flags = state_->get().flags.load(std::memory_order_acquire);
  const std::uint32_t fresh = flags & ~seen_flags_ & (kFlagDeadline | kFlagPreempted);
  if (fresh == 0) return;
  seen_flags_ |= fresh;
  if (fresh & kFlagDeadline) dl_.mark_fired();  // relayed here, not again by check_deadline
  procs_.told_to_exit(fresh & kFlagPreempted ? "preempted" : "deadline");
  procs_.signal_ranks(fresh & kFlagPreempted ? "preempted (from the node's publisher)"
                                             : "deadline (from the node's publisher)");
  run_hook(fresh);
}

// The node state's health and the publisher role, once per turn of the loop.
void supervisor::look_after_state() {
  if (!state_) return;
  const std::string damage = state_->damage();
  if (!damage.empty()) {
    log("%s; this supervisor stops using it: the ranks still get every notice as SIG%s and watch the switches on "
        "their own%s",
        damage.c_str(), signal_name(opts_.graceful_signal).c_str(),
        opts_.hang_timeout.count() != 0 ? ", and hangs are no longer detected in this step" : "");
    role_.reset();
    health_.state_damaged(damage);
    state_.reset();  // the ranks still hold it: the file stays for them
    return;
  }
  if (!state_removed_said_ && state_->removed()) {
    state_removed_said_ = true;
    log("node state %s was removed (systemd-logind's RemoveIPC=yes does this when the user's last login session on "
        "the node ends); the running ranks keep sharing it, and ranks started from now on find it through this "
        "supervisor",
        state_->path().c_str());
  }
  take_publisher_role();
  if (procs_.told_ms() == 0 && (state_->get().flags.load(std::memory_order_acquire) & kFlagExitSwitch) != 0)
    procs_.told_to_exit("kill switch");
}

// Everything below this supervisor but its own helpers: a hung rank ignores polite
// signals, and its stacks are already on disk.
void supervisor::kill_ranks() {
  health_.trainctl_ended_ranks();
  procs_.kill_all();
}

// What a hang's dump ends in: the hook (with where the job is stuck), then the action.
void supervisor::after_hang_dump(const std::string& summary) {
  hook_.notice("hang", dl_.deadline_ms(), dl_.end_ms(), summary);
  end_.note_hang(health_.stall_ms());
  switch (opts_.on_hang) {
    case hang_action::alert:
      break;
    case hang_action::save_exit:
      log("hang: asking the ranks to save and exit (--hang-action=save-exit)");
      fire(kFlagHang, "hang");
      break;
    case hang_action::end_step:
      log("hang: ending the step so that the next array task or requeue resumes (--hang-action=end-step)");
      kill_ranks();
      break;
  }
}

// A follower holds the publisher by a pidfd in the loop's epoll set: the publisher's
// death wakes it at once to take the role over, so it need not try every second.
void supervisor::watch_publisher() {
  if (!role_) return;
  const int fd = role_->rewatch_holder();
  if (fd < 0 || loop_fd() == sigfd_) return;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  epoll_ctl(loop_fd(), EPOLL_CTL_ADD, fd, &ev);
}

// Removes this step's node state when the last process lets go of it, and what killed
// steps left in trainctl's own state directory (never in a directory given by --state).
void supervisor::close_state() {
  if (role_) role_->give_up();
  role_.reset();
  health_.set_state(nullptr);
  if (!state_) return;
  state_->unlink_if_last();
  const std::string dir = state_->path().substr(0, state_->path().rfind('/'));
  state_.reset();
  if (dir == state_dir()) sweep_stale_state(dir);
}

int supervisor::loop_fd() {
  if (loop_fd_ >= 0) return loop_fd_;
  loop_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (loop_fd_ < 0) return sigfd_;
  for (int fd : {sigfd_, health_.death_fd()}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    if (fd >= 0) epoll_ctl(loop_fd_, EPOLL_CTL_ADD, fd, &ev);
  }
  return loop_fd_;
}

int supervisor::run(char* const* argv, pid_t adopt) {
  if (!opts_.kill_switch.empty()) {
    struct stat st {};
    if (stat(opts_.kill_switch.c_str(), &st) == 0) {
      log("kill switch %s exists: not starting %s (remove it to run again)", opts_.kill_switch.c_str(),
          adopt > 0 ? "the task" : argv[0]);
      if (adopt > 0) {
        kill(adopt, SIGKILL);
        waitpid(adopt, nullptr, 0);
      }
      return 0;
    }
  }
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&mask, s);
  for (int s : opts_.notices) sigaddset(&mask, s);
  sigaddset(&mask, opts_.graceful_signal);
  sigprocmask(SIG_SETMASK, &mask, nullptr);
  sigfd_ = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sigfd_ < 0) {
    log("signalfd: %s", std::strerror(errno));
    return 70 << 8;
  }
  if (opts_.deadline > 0) dl_.set_given(static_cast<std::int64_t>(opts_.deadline * 1000));
  // The first EndTime read waits a second: a short step never costs an RPC, and the
  // launch stays as fast as without trainctl.
  dl_.schedule_first_read();
  open_state();
  if (const int status = end_.start(adopt, state_ ? &state_->get() : nullptr); status >= 0) {
    close_state();
    return status;
  }
  if (dl_.deadline_ms() != 0) publish_deadline();
  if (graceful_is_auto()) {
    const std::string array = env_or_empty("SLURM_ARRAY_JOB_ID");
    std::string problem;
    auto_ = std::make_unique<graceful_auto>(array.empty() ? opts_.job_id : array, opts_.job_id, node_name(), &problem);
    if (!problem.empty()) log("--graceful-exit=auto: %s", problem.c_str());
  }
  if (!opts_.kill_switch.empty()) setenv("KILL_SWITCH", opts_.kill_switch.c_str(), 1);
  if (!opts_.save_switch.empty()) setenv("SAVE_SWITCH", opts_.save_switch.c_str(), 1);
  const std::string sigs = signal_name(opts_.graceful_signal) + ",TERM";
  setenv("TRAINCTL_SIGNALS", sigs.c_str(), 0);
  setenv("TRAINCTL_SUPERVISED", "1", 1);  // a batch script can tell it already runs under one
  setenv("TRAINCTL_SUPERVISOR_PID", std::to_string(getpid()).c_str(), 1);  // ranks allow its stack readers
  setenv("TRAINCTL_LOG_DIR", resolve_log_dir(opts_.log_dir).c_str(), 1);   // slow_nodes beside the stacks
  if (!bad_nodes_path().empty()) setenv("TRAINCTL_BAD_NODES", bad_nodes_path().c_str(), 1);
  if (opts_.hang_timeout.count() != 0 && !state_)
    log("--hang-timeout needs the node state, which was refused above: hangs go undetected in this step");

  if (adopt > 0)
    procs_.adopt(adopt);
  else if (procs_.start(argv) < 0) {
    close_state();
    return 127 << 8;
  }
  health_.started(state_.get(), procs_.child());
  milliseconds health_wait = health_.tick();
  // An adopted child may have ended before this process blocked SIGCHLD (the signal is
  // then lost, not pending): look once before waiting for it.
  reap();
  while (!procs_.done()) {
    const std::int64_t now_ms = unix_now_ms();
    milliseconds wait(publishes() ? opts_.poll_interval : state_ ? kFollowerWait : milliseconds(1000));
    if (reads_job_itself() && tracks_endtime()) wait = std::min(wait, milliseconds(dl_.next_read_ms() - now_ms));
    wait = dl_.wait(tracks_endtime(), wait);
    if (state_ && !publishes()) {  // a follower: the publisher's deadline, a little after it fires it
      const std::int64_t d = state_->get().deadline_ms.load(std::memory_order_acquire);
      if (d != 0 && (seen_flags_ & kFlagDeadline) == 0 && d + 200 > now_ms)
        wait = std::min(wait, milliseconds(d + 200 - now_ms));
    }
    if (query_.running())
      wait = std::min(wait, std::chrono::duration_cast<milliseconds>(query_.deadline() - clock::now()));
    if (notice_pending_) wait = std::min(wait, std::chrono::duration_cast<milliseconds>(notice_by_ - clock::now()));
    wait = procs_.wait(wait);
    wait = std::min(wait, hook_.tick());
    wait = std::min(wait, health_wait);
    wait = std::max(wait, milliseconds(0));
    if (publishes()) {
      role_->pub()->wait_and_refresh(loop_fd(), wait);
    } else {
      pollfd p{loop_fd(), POLLIN, 0};
      poll(&p, 1, static_cast<int>(wait.count()));
    }
    signalfd_siginfo si;
    while (read(sigfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) handle_signal(si);
    reap();  // a SIGCHLD merged with another may not show up on its own
    if (procs_.done()) break;
    query_.drain();
    if (query_.running() && clock::now() >= query_.deadline()) {
      std::string error;
      on_job_answer(query_.expire(&error), error);
    }
    if (notice_pending_ && clock::now() >= notice_by_) {
      log("no answer from the controller within %s: relaying the notice as a signal",
          format_duration(kNoticeClassifyWait).c_str());
      resolve_notice("notice");
    }
    // EndTime matters only for a deadline; notices query on their own.
    if (reads_job_itself() && tracks_endtime() && unix_now_ms() >= dl_.next_read_ms())
      start_query(dl_.end_ms() == 0 ? "first read" : "periodic");
    learn_save_time();
    adopt_end_news();
    check_deadline();
    look_after_state();
    watch_publisher();
    follow_node_flags();
    health_wait = health_.tick();
    procs_.tick();
  }
  if (query_.running()) query_.expire(nullptr);  // not a process the command left behind
  if (opts_.batch) {
    if (const std::optional<std::string> detail = end_.judge())
      hook_.notice("no-progress", dl_.deadline_ms(), dl_.end_ms(), *detail);  // before hook_.finish()
  }
  hook_.finish();  // before end_leftovers, which would count it as left behind
  health_.abandon();
  health_.command_ended(procs_.status());
  procs_.end_leftovers();
  learn_save_time();  // the save the ranks made before they exited
  if (opts_.batch) end_.requeue_if_preempted(term_seen_ || preempted_);
  if (std::getenv("SLURM_JOB_ID") != nullptr && state_ && publishes() && state_->damage().empty())
    end_.note_compute(state_->get());
  if (opts_.batch) end_.note_task_end(procs_.status(), preempted_);
  close_state();
  // Quiet on success, as GNU tools are: every rank's task of every job said status 0.
  if (WIFEXITED(procs_.status()) && WEXITSTATUS(procs_.status()) != 0)
    log("command exited with status %d", WEXITSTATUS(procs_.status()));
  else if (WIFSIGNALED(procs_.status()))
    log("command was killed by SIG%s", signal_name(WTERMSIG(procs_.status())).c_str());
  return end_.no_progress() ? kNoProgressExit << 8 : procs_.status();
}

}  // namespace

int run_supervised(const supervisor_options& opts, char* const* argv, pid_t adopt) {
  supervisor s(opts);
  return s.run(argv, adopt);
}

void exit_like(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    sigprocmask(SIG_UNBLOCK, &one, nullptr);
    raise(sig);
    _exit(128 + sig);
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

}  // namespace trainctl
