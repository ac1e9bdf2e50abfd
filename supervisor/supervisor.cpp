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
#include "graceful_auto.hpp"
#include "no_progress.hpp"
#include "node_health.hpp"
#include "node_state.hpp"
#include "notice_hook.hpp"
#include "parse.hpp"
#include "publisher.hpp"
#include "query_schedule.hpp"
#include "ranks.hpp"
#include "run_events.hpp"
#include "run_progress.hpp"
#include "slurm_api.hpp"
#include "slurm_job.hpp"
#include "stack_dump.hpp"

namespace trainctl {
namespace {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How long a notice signal waits for the controller's answer (is this a preemption?)
// before it is relayed as a plain signal.
constexpr milliseconds kNoticeClassifyWait{2000};
// The query that catches a TimeLimit change made since the last periodic read.
constexpr std::int64_t kPreDeadlineQueryMs = 20000;
// How long an idle follower (a supervisor that does not publish the node state) sleeps:
// the publisher's death wakes it at once (a pidfd), the deadline at its time.
constexpr milliseconds kFollowerWait{60000};
// A TERM this close to the known EndTime is the time limit, not a preemption: no query.
constexpr std::int64_t kAtEndTimeMs = 5000;
// A rank still running this long after it was told to exit gets a line.
constexpr std::int64_t kExitReportAfterMs = 60000;

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
            [this](const std::string& summary) { after_hang_dump(summary); }) {
    health_.set_owned_elsewhere([this](pid_t p) { return hook_.owns(p) || p == query_.pid(); });
    health_.set_records([this] { return pub_ != nullptr; });
  }
  int run(char* const* argv, pid_t adopt);

 private:
  void log(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  void open_state();
  int pick_log_fd() const;
  void take_publisher_role();
  pid_t start_command(char* const* argv);
  void handle_signal(const signalfd_siginfo& si);
  void reap();
  void start_query(const char* why);
  void on_job_answer(const std::optional<job_times>& jt, const std::string& error);
  void resolve_notice(const char* why);
  void publish_deadline();
  void set_end_time(std::int64_t end, bool moved);
  void adopt_end_news();
  void look_after_state();
  void note_exit_told(const char* why);
  void report_lingering_ranks(const char* when);
  void fire(std::uint32_t flag, const char* why);
  void relay_to_ranks(const char* why);
  void run_hook(std::uint32_t flag);
  void note_hang();
  void append_event_bounded(const std::string& line, const char* what);
  void follow_node_flags();
  void check_deadline();
  void end_leftovers();
  void requeue_if_preempted();
  void note_task_end();
  void note_compute();
  int start_breaker(pid_t adopt);
  void judge_run_end();
  void forgive_crash_loop_nodes();
  void cancel_rest_of_array();
  void kill_ranks();
  void after_hang_dump(const std::string& summary);
  // The loop's one descriptor: the signals and the ranks' deaths (node health).
  int loop_fd();
  void close_state();
  void watch_publisher();
  void schedule_pre_deadline_query();
  std::string preempted_marker() const {
    const std::string restart = env_or_empty("SLURM_RESTART_COUNT");
    return "once.preempted." + opts_.job_id + "." + (restart.empty() ? "0" : restart);
  }
  // This run's place in its array (run_progress.hpp): its job, array index and restart.
  array_run this_run() const {
    array_run r;
    r.job = opts_.job_id;
    const std::string task = env_or_empty("SLURM_ARRAY_TASK_ID"), restart = env_or_empty("SLURM_RESTART_COUNT");
    r.task = all_digits(task, 9) ? std::stoll(task) : -1;
    r.restart = restart.empty() ? 0 : all_digits(restart, 9) ? std::stoll(restart) : -1;
    return r;
  }
  bool tracks_endtime() const { return !opts_.job_id.empty() && opts_.graceful_exit.count() != 0; }
  bool graceful_is_auto() const { return opts_.graceful_exit == option::kGracefulExitAuto; }
  // The graceful exit now (auto: learnt, for the job's time limit), and why (auto only).
  milliseconds graceful_exit(std::string* why = nullptr) const;
  void learn_save_time();
  void learn_cut_save();
  // Whether this supervisor reads EndTime and preemption itself: always, unless another
  // supervisor on the node publishes them into a node state this one shares. No node
  // state problem (a refused file, a lock held by a rank) may cost a notice.
  bool reads_job_itself() const {
    return pub_ || !state_ || state_->get().supervised.load(std::memory_order_acquire) == 0;
  }

  supervisor_options opts_;
  notice_hook hook_;
  node_health health_;
  int loop_fd_ = -1;  // epoll: sigfd_ and health_.death_fd()
  std::unique_ptr<node_state_file> state_;
  std::unique_ptr<publisher> pub_;
  int sigfd_ = -1;
  pid_t child_ = 0;
  bool child_done_ = false;
  int child_status_ = 0;
  std::int64_t end_ms_ = 0;       // the job's EndTime as last read
  std::int64_t end_read_ms_ = 0;  // when (by this supervisor, or another node's, see adopt_end_news)
  std::int64_t limit_s_ = -1;
  std::int64_t deadline_ms_ = 0;  // when to ask the ranks to exit; 0: none
  std::int64_t started_ms_ = 0;   // unix ms: this run's events are the ones since
  breaker_verdict breaker_;       // the no-progress breaker's verdict at the start
  bool no_progress_ = false;      // the ranks ended this run on the breaker's vote (batch step)
  bool deadline_fired_ = false;
  bool deadline_past_when_learned_ = false;  // the graceful exit left no time to train
  std::int64_t deadline_set_ms_ = 0;         // when deadline_ms_ last changed
  bool state_removed_said_ = false;
  void set_deadline_ms(std::int64_t d) {
    deadline_ms_ = d;
    deadline_set_ms_ = unix_now_ms();
  }
  bool preempted_ = false;
  std::uint32_t seen_flags_ = 0;    // node flags already relayed (followers)
  query_slots slots_;               // when this node's queries fall (no two nodes in one second)
  std::int64_t next_query_ms_ = 0;  // the next periodic EndTime read, wall clock
  std::int64_t pre_deadline_query_ms_ = 0;
  bool term_seen_ = false;  // a TERM came: the batch end asks whether it was a preemption
  int publisher_fd_ = -1;   // pidfd of the node's publisher, while this one follows
  pid_t publisher_pid_ = 0;
  job_query query_;        // the EndTime query in flight, if any
  std::string query_why_;  // what it is for, for the log
  bool pre_deadline_queried_ = false;
  bool notice_pending_ = false;    // a notice signal waits for the query to say what it is
  clock::time_point notice_by_{};  // relayed as a plain signal then at the latest
  std::int64_t exit_told_ms_ = 0;  // when the ranks were first told to exit (0: not yet)
  std::string exit_told_why_;
  bool exit_reported_ = false;           // lingering ranks reported
  bool job_ending_ = false;              // the controller says the job is no longer RUNNING
  std::string lock_problem_;             // reported once
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
  if (child_ > 0) {
    std::ifstream in("/proc/" + std::to_string(child_) + "/cmdline");
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
  take_publisher_role();
}

void supervisor::take_publisher_role() {
  if (pub_ || !state_) return;
  std::string problem;
  int taken_from = 0;
  if (!state_->try_become_publisher(&problem, publisher_stale_after_ms(state_->get()), &taken_from)) {
    if (!problem.empty() && problem != lock_problem_)
      log("%s; this supervisor still relays every notice itself", problem.c_str());
    lock_problem_ = problem;
    return;
  }
  if (taken_from != 0)
    log("the node's publisher (pid %d) stopped refreshing the node state; this supervisor publishes it now",
        taken_from);
  // A follower that takes over goes on from the deadline its predecessor published and
  // reads EndTime in its own slot of the period: a takeover costs the controller nothing.
  const std::int64_t published = state_->get().deadline_ms.load(std::memory_order_acquire);
  if (deadline_ms_ == 0 && published != 0 && !deadline_fired_) {
    set_deadline_ms(published);
    schedule_pre_deadline_query();
  }
  if (next_query_ms_ != 0 && published != 0)
    next_query_ms_ =
        next_periodic_ms(slots_, opts_.endtime_poll.count(), unix_now_ms() + opts_.endtime_poll.count() / 2);
  state_->get().supervised.store(1);
  publisher_options po;
  po.poll_interval = opts_.poll_interval;
  po.inotify_after = milliseconds(1000);
  pub_ = std::make_unique<publisher>(state_->get(), po);
  pub_->refresh();
}

pid_t supervisor::start_command(char* const* argv) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    log("cannot start %s: fork: %s", argv[0], std::strerror(errno));
    return -1;
  }
  if (pid == 0) {
    // slurmstepd leaves signals blocked in its children, and the supervisor blocks
    // more for its signalfd: the command starts with none blocked, and with the
    // notice signals ignored so that they cannot kill the launcher (SIG_IGN survives
    // exec; ranks that use trainctl install their own handler).
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int s : opts_.shield) signal(s, SIG_IGN);
    // Should the supervisor die (the OOM killer, kill -9), the command hears of it as a
    // notice instead of running on outside the step: a rank exits through its normal
    // path; the ranks under a launcher (which ignores the signal) see the supervisor's
    // pidfd (TRAINCTL_SUPERVISOR_PID) instead.
    prctl(PR_SET_PDEATHSIG, opts_.graceful_signal);
    if (getppid() != parent) raise(opts_.graceful_signal);
    execvp(argv[0], argv);
    std::fprintf(stderr, "%s: cannot run %s: %s\n", opts_.log_prefix.c_str(), argv[0], std::strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  return pid;
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
    if (p == child_) {
      child_done_ = true;
      child_status_ = status;
    }
  }
}

void supervisor::relay_to_ranks(const char* why) {
  size_t sent = 0;
  for (const auto& rank : find_rank_procs(getpid(), opts_.launchers, !opts_.batch))
    if (!hook_.owns(rank.pid) && !health_.owns(rank.pid) && rank.pid != query_.pid())
      sent += pid_handle(rank).signal(opts_.graceful_signal);
  log("%s: sent SIG%s to %zu rank process%s", why, signal_name(opts_.graceful_signal).c_str(), sent,
      sent == 1 ? "" : "es");
}

void supervisor::fire(std::uint32_t flag, const char* why) {
  if (state_) {
    state_->get().flags.fetch_or(flag, std::memory_order_release);
    state_->get().seq.fetch_add(1, std::memory_order_release);
    seen_flags_ |= flag;
  }
  relay_to_ranks(why);
  health_.trainctl_ended_ranks();  // a failure after a notice is no crash
  note_exit_told(flag & kFlagPreempted  ? "preempted"
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
  hook_.notice(kind, deadline_ms_, end_ms_, "");
}

// Starts a read of EndTime and preemption unless one is in flight; the answer comes
// to on_job_answer when the loop reaps the query.
void supervisor::start_query(const char* why) {
  if (opts_.job_id.empty() || !reads_job_itself() || query_.running()) return;
  // The batch step usually only runs srun; the steps' supervisors ask the controller.
  // It asks only while the batch script itself runs rank processes, which keeps the
  // controller load at one supervisor per node.
  const std::int64_t period = opts_.endtime_poll.count();
  next_query_ms_ = next_periodic_ms(slots_, period, unix_now_ms() + period / 2);
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
        end_ms_ ? format_slurm_timestamp(end_ms_).c_str() : "no deadline");
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
      claim_once(preempted_marker());
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
  if (jt->end_ms == 0 && end_ms_ != 0)
    log("EndTime read as unknown (%s); keeping %s", query_why_.c_str(), format_slurm_timestamp(end_ms_).c_str());
  if (running && jt->end_ms != 0 && unix_now_ms() > end_read_ms_) {
    end_read_ms_ = unix_now_ms();
    if (jt->end_ms != end_ms_) {
      const bool moved = end_ms_ != 0;
      if (moved)
        log("EndTime moved from %s to %s (TimeLimit %lld s)", format_slurm_timestamp(end_ms_).c_str(),
            format_slurm_timestamp(jt->end_ms).c_str(), static_cast<long long>(jt->limit_s));
      limit_s_ = jt->limit_s;
      set_end_time(jt->end_ms, moved);
    }
    publish_deadline();  // the read's time too: the ranks pass the freshest read on
  }
  if (notice_pending_) resolve_notice("notice");
}

// The deadline from a new EndTime (read by this supervisor, or by another node's and
// passed on by the ranks): logged, published, and the last read before it scheduled.
void supervisor::set_end_time(std::int64_t end, bool moved) {
  end_ms_ = end;
  if (opts_.graceful_exit.count() != 0) {
    std::string why;
    const milliseconds graceful = graceful_exit(&why);
    const std::int64_t d = end_ms_ - graceful.count();
    if (d != deadline_ms_ && !deadline_fired_) {
      set_deadline_ms(d);
      pre_deadline_queried_ = false;
      schedule_pre_deadline_query();
      publish_deadline();
      log("deadline %s (EndTime %s - graceful exit %s)", format_slurm_timestamp(d).c_str(),
          format_slurm_timestamp(end_ms_).c_str(),
          why.empty() ? format_duration(graceful).c_str() : ("auto: " + why).c_str());
      const std::int64_t now = unix_now_ms();
      deadline_past_when_learned_ = d <= now;
      const std::string left = format_duration(std::chrono::seconds(std::max<std::int64_t>(0, end_ms_ - now) / 1000));
      // Why the deadline is already past decides what the line says: only a first
      // read is the options' doing.
      if (deadline_past_when_learned_ && (preempted_ || moved))
        log("%s left %s to EndTime, less than the graceful exit (%s): the ranks are told to save and exit now",
            preempted_ ? "the preemption" : "the moved EndTime", left.c_str(), format_duration(graceful).c_str());
      else if (deadline_past_when_learned_)
        log("the graceful exit (%s) is not shorter than the time left (%s of a %s time limit): the ranks are "
            "told to save and exit now; give a shorter --graceful-exit (GRACEFUL_EXIT in the template) or a "
            "longer --time",
            format_duration(graceful).c_str(), left.c_str(),
            limit_s_ > 0 ? format_duration(std::chrono::seconds(limit_s_)).c_str() : "unknown");
    }
  }
}

// A fresher EndTime than this supervisor read, in the node state: another node's
// supervisor read it, and the ranks' agreement carried it here (controller.cpp,
// learn_end_news). A node whose supervisor was stopped when the TimeLimit was raised
// would otherwise fire the old deadline on waking, and its ranks with it.
void supervisor::adopt_end_news() {
  if (!state_ || end_ms_ == 0 || !tracks_endtime()) return;  // a follower: its publisher's to follow
  const node_state& ns = state_->get();
  const std::int64_t read = ns.end_read_ms.load(std::memory_order_acquire);
  const std::int64_t end = ns.end_ms.load(std::memory_order_acquire);
  if (read <= end_read_ms_ || end == 0 || end == end_ms_) return;
  log("EndTime moved from %s to %s: read at %s by another node's supervisor and passed on by the ranks, before "
      "this supervisor's own read",
      format_slurm_timestamp(end_ms_).c_str(), format_slurm_timestamp(end).c_str(),
      format_slurm_timestamp(read).c_str());
  end_read_ms_ = read;
  set_end_time(end, true);
}

milliseconds supervisor::graceful_exit(std::string* why) const {
  if (!graceful_is_auto()) return opts_.graceful_exit;
  const auto_graceful a = auto_ ? auto_->current(std::max<std::int64_t>(0, limit_s_)) : auto_graceful_exit(0, 0);
  if (why != nullptr) *why = a.why;
  return a.graceful;
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
  auto_->saw(save_ms, pub_ != nullptr, &problem);
  if (!problem.empty()) log("cannot remember the save time for the next task: %s", problem.c_str());
  std::string why;
  const milliseconds graceful = graceful_exit(&why);
  if (end_ms_ == 0 || deadline_fired_ || child_done_) {
    log("a save took %.1f s: graceful exit %s from now on", static_cast<double>(save_ms) / 1000.0, why.c_str());
    return;
  }
  const std::int64_t d = end_ms_ - graceful.count();
  if (d == deadline_ms_) return;
  set_deadline_ms(d);
  pre_deadline_queried_ = false;
  schedule_pre_deadline_query();
  publish_deadline();
  if (pub_) pub_->set_deadline_ms(deadline_ms_);
  log("a save took %.1f s: deadline now %s (EndTime %s - graceful exit auto: %s)",
      static_cast<double>(save_ms) / 1000.0, format_slurm_timestamp(d).c_str(), format_slurm_timestamp(end_ms_).c_str(),
      why.c_str());
}

// --graceful-exit=auto and a save cut short (SIGTERM: the time limit, a preemption's
// end, scancel): a rank that reached the exit (its beat slot says so) and still runs
// has been saving since that agreement, which no longest_save_ms records. The
// longest such time is a lower bound of this array's saves, learnt as a save of that
// length, so the next task leaves more. A rank that never agreed after the exit (still
// starting, hung) teaches nothing.
void supervisor::learn_cut_save() {
  if (!auto_ || !state_ || exit_told_ms_ == 0) return;
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
  auto_->saw(cut_ms, pub_ != nullptr, &problem);
  std::string why;
  graceful_exit(&why);
  log("a save was cut short after %.1f s (the ranks were told to exit: %s; one still saved at SIGTERM): the next "
      "task of the array leaves %s",
      static_cast<double>(cut_ms) / 1000.0, exit_told_why_.c_str(), why.c_str());
  if (!problem.empty()) log("cannot remember the save time for the next task: %s", problem.c_str());
}

// A notice signal is relayed once the controller said whether it is a preemption (then
// it already went out as one), or after kNoticeClassifyWait without an answer.
void supervisor::resolve_notice(const char* why) {
  notice_pending_ = false;
  if (!preempted_)
    fire(kFlagSignal, why);
  else
    relay_to_ranks(why);
}

// The deadline goes into the node state as soon as it is known, so that whoever
// publishes (or a rank whose supervisor stopped) fires it on time.
void supervisor::publish_deadline() {
  if (!state_) return;
  node_state& ns = state_->get();
  // Never a staler EndTime over a fresher one the ranks brought (adopt_end_news takes
  // that one at this supervisor's next wake).
  if (ns.end_read_ms.load(std::memory_order_acquire) > end_read_ms_ &&
      ns.end_ms.load(std::memory_order_acquire) != end_ms_)
    return;
  ns.end_ms.store(end_ms_, std::memory_order_release);
  ns.end_read_ms.store(end_read_ms_, std::memory_order_release);
  ns.deadline_ms.store(deadline_ms_, std::memory_order_release);
  ns.seq.fetch_add(1, std::memory_order_release);
}

// The last read before the deadline, for a TimeLimit changed since the periodic one: in
// this node's own second within the cycle that ends kPreDeadlineQueryMs before it.
void supervisor::schedule_pre_deadline_query() {
  pre_deadline_query_ms_ = in_own_second(slots_, deadline_ms_ - kPreDeadlineQueryMs - own_cycle_ms(slots_));
}

void supervisor::check_deadline() {
  if (deadline_fired_ || deadline_ms_ == 0) return;
  const std::int64_t now = unix_now_ms();
  // One last read shortly before, for a TimeLimit changed since the periodic one; the
  // deadline itself never waits for an answer.
  if (!pre_deadline_queried_ && tracks_endtime() && now >= pre_deadline_query_ms_) {
    pre_deadline_queried_ = true;
    start_query("before the deadline");
  }
  if (now < deadline_ms_) return;
  deadline_fired_ = true;
  if (pub_) pub_->set_deadline_ms(deadline_ms_);
  const std::int64_t late_ms = now - deadline_ms_;
  if (deadline_past_when_learned_) {
    fire(kFlagDeadline, "deadline already past when EndTime was read (see the line above)");
  } else if (late_ms > 2000 && deadline_set_ms_ > deadline_ms_) {
    // Learnt late, not fired late: a longer save, or a takeover from a stopped publisher.
    char why[192];
    std::snprintf(why, sizeof why,
                  "deadline already %.0f s past when this supervisor learnt it (a longer save moved it earlier, or "
                  "it came from a stopped publisher)",
                  (deadline_set_ms_ - deadline_ms_) / 1000.0);
    fire(kFlagDeadline, why);
  } else if (late_ms > 2000) {
    char why[96];
    std::snprintf(why, sizeof why, "deadline reached %.0f s ago (this supervisor was stopped or busy)",
                  late_ms / 1000.0);
    fire(kFlagDeadline, why);
  } else {
    fire(kFlagDeadline, "deadline reached");
  }
}

void supervisor::note_exit_told(const char* why) {
  if (exit_told_ms_ != 0) return;
  exit_told_ms_ = unix_now_ms();
  exit_told_why_ = why;
}

// Ranks that were told to exit and still run: named in one line, once, so that a rank
// that ignores the exit is not mistaken for a slow save, nor the job's end for an
// extension.
void supervisor::report_lingering_ranks(const char* when) {
  if (exit_reported_ || exit_told_ms_ == 0) return;
  exit_reported_ = true;  // one look: a command that outlives its ranks (a launcher) is not one
  std::string names;
  size_t n = 0;
  for (const auto& r : find_rank_procs(getpid(), opts_.launchers, !opts_.batch)) {
    if (hook_.owns(r.pid) || health_.owns(r.pid) || r.pid == query_.pid()) continue;
    std::string rank = proc_environ_value(r.pid, "RANK");
    if (rank.empty()) rank = proc_environ_value(r.pid, "SLURM_PROCID");
    names +=
        std::string(n++ ? ", " : "") + "rank " + (rank.empty() ? "?" : rank) + " (pid " + std::to_string(r.pid) + ")";
  }
  if (n == 0) return;
  log("%zu rank process%s still running %lld s after %s told to exit (%s)%s: %s", n, n == 1 ? "" : "es",
      static_cast<long long>((unix_now_ms() - exit_told_ms_) / 1000), n == 1 ? "it was" : "they were",
      exit_told_why_.c_str(), when, names.c_str());
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
      report_lingering_ranks(", when SIGTERM came");
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
    const bool may_be_preemption = sig == SIGTERM && (end_ms_ == 0 || unix_now_ms() < end_ms_ - kAtEndTimeMs);
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
  health_.trainctl_ended_ranks();     // a failure after a termination signal is no crash
  if (child_ > 0) kill(child_, sig);  // INT, HUP, QUIT: passed on as they are
}

void supervisor::follow_node_flags() {
  if (!state_ || pub_) return;
  const std::uint32_t flags = state_->get().flags.load(std::memory_order_acquire);
  const std::uint32_t fresh = flags & ~seen_flags_ & (kFlagDeadline | kFlagPreempted);
  if (fresh == 0) return;
  seen_flags_ |= fresh;
  if (fresh & kFlagDeadline) deadline_fired_ = true;  // relayed here, not again by check_deadline
  note_exit_told(fresh & kFlagPreempted ? "preempted" : "deadline");
  relay_to_ranks(fresh & kFlagPreempted ? "preempted (from the node's publisher)"
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
    pub_.reset();
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
  if (pub_ && !state_->is_publisher()) {
    pub_.reset();
    log("another process took over publishing the node state while this supervisor was stopped or busy; it "
        "relays notices and follows the node state now");
  }
  take_publisher_role();
  if (exit_told_ms_ == 0 && (state_->get().flags.load(std::memory_order_acquire) & kFlagExitSwitch) != 0)
    note_exit_told("kill switch");
}

void supervisor::end_leftovers() {
  // Orphans of the command (workers in their own sessions) were reparented to us, a
  // subreaper: with no child left there is no descendant either, and nothing to read.
  if (waitpid(-1, nullptr, WNOHANG | __WALL) < 0 && errno == ECHILD) return;
  for (int round = 0; round < 2; ++round) {
    std::vector<pid_handle> ours;
    // Not this process's own helpers: the log directory's check, a stacks or evidence
    // child, the hook, a query, abandoned above and maybe not dead yet. Counting them
    // said "left 1 process behind" after a clean `true` in a few runs of a hundred.
    for (const auto& p : descendants(getpid(), {}))
      if (p.ours && !hook_.owns(p.pid) && !health_.owns(p.pid) && p.pid != query_.pid()) ours.emplace_back(p);
    if (ours.empty()) return;
    if (round == 0)
      log("the command left %zu process%s behind; ending them", ours.size(), ours.size() == 1 ? "" : "es");
    for (const auto& p : ours) p.signal(round == 0 ? SIGTERM : SIGKILL);
    for (int i = 0; i < 50; ++i) {
      int status;
      while (waitpid(-1, &status, WNOHANG) > 0) {
      }
      // A reaped child's pidfd answers ESRCH; a zombie that is not ours to reap still
      // answers, and is waited for like a live one.
      if (std::none_of(ours.begin(), ours.end(), [](const pid_handle& p) { return p.alive(); })) break;
      usleep(100000);
    }
  }
}

// Everything below this supervisor but its own helpers: a hung rank ignores polite
// signals, and its stacks are already on disk.
void supervisor::kill_ranks() {
  health_.trainctl_ended_ranks();
  for (const auto& p : descendants(getpid(), {}))
    if (p.ours && !hook_.owns(p.pid) && !health_.owns(p.pid) && p.pid != query_.pid()) pid_handle(p).signal(SIGKILL);
}

// The hang on `trainctl report`'s timeline, with how long the ranks had stalled (at least
// the hang timeout). Written here, not from the loop's hot path, and in a child with a
// limit: the home may be the stalled mount the ranks hang on, and the supervisor must
// go on relaying notices.
void supervisor::note_hang() {
  const char* job = std::getenv("SLURM_JOB_ID");
  if (job == nullptr) return;
  run_event e;
  e.ms = unix_now_ms();
  e.job = job;
  e.what = "notice";
  e.reason = "hang";
  e.took_ms = health_.stall_ms();
  append_event_bounded(format_run_event(e), "cannot note the hang for `trainctl report`");
}

// What a straggler cost (`trainctl report`): the publisher of the node's state writes,
// as it ends, each rank's work per step over the steps the ranks timed and the slowest
// rank's (the agreement's), from the ranks' heartbeat slots. A rank process that a
// launcher restarted counts from its restart.
void supervisor::note_compute() {
  const char* job = std::getenv("SLURM_JOB_ID");
  if (job == nullptr || !state_ || !pub_ || !state_->damage().empty()) return;
  const node_state& ns = state_->get();
  run_event e;
  e.ms = unix_now_ms();
  e.job = job;
  e.what = "compute";
  std::int64_t steps = 0, slowest_us = 0, marked = 1;
  for (const rank_beat& b : ns.beats) {
    const std::int64_t n = b.timed_steps.load(std::memory_order_acquire);
    const std::int32_t rank = b.rank.load(std::memory_order_relaxed);
    if (n <= 0 || rank < 0) continue;
    e.works.emplace_back(rank, b.work_total_us.load(std::memory_order_relaxed) / n);
    if (b.work_marked.load(std::memory_order_relaxed) != 1) marked = 0;
    if (n > steps) {
      steps = n;
      slowest_us = b.slowest_total_us.load(std::memory_order_relaxed) / n;
    }
  }
  if (e.works.empty()) return;
  e.figures = {{"steps", steps}, {"slowest_us", slowest_us}, {"marked", marked}};
  append_event_bounded(format_run_event(e), "cannot note the ranks' step times for `trainctl report`");
}

// Appends a line to the run events in a child with a 5 s limit; says why not.
void supervisor::append_event_bounded(const std::string& line, const char* what) {
  const std::string path = own_run_events_path();
  child_spec spec;
  spec.deadline = milliseconds(5000);
  spec.ignore_signals = opts_.notices;
  spec.work = [path, line] { return append_run_events(path, line); };
  const child_result r = run_child(spec);
  const std::string why = r.ok() ? r.output : r.error;
  if (!why.empty()) log("%s: %s", what, why.c_str());
}

// What a hang's dump ends in: the hook (with where the job is stuck), then the action.
void supervisor::after_hang_dump(const std::string& summary) {
  hook_.notice("hang", deadline_ms_, end_ms_, summary);
  note_hang();
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

// How this run of the array (or of the requeued job) ended, for the no-progress count
// (run_progress.hpp): written by the batch step's supervisor, once per run, in a child
// (the home may stall).
void supervisor::note_task_end() {
  if (opts_.job_id.empty()) return;
  run_event e;
  e.ms = unix_now_ms();
  e.job = opts_.job_id;
  e.what = "task_end";
  e.task = this_run().task;
  e.restart = this_run().restart;
  e.reason = no_progress_                                    ? "no-progress"
             : preempted_ || was_claimed(preempted_marker()) ? "preempted"
                                                             : task_end_reason(child_status_);
  append_event_bounded(format_run_event(e), "cannot note how this run ended (the no-progress count reads it)");
}

// The no-progress breaker at the start (run_progress.hpp): arms the node state when the
// array's last runs failed without progress, or ends this run at once when the breaker
// already ended one of another job (a pending task its cancel missed). A wait status to
// end with, or -1 to go on.
int supervisor::start_breaker(pid_t adopt) {
  if (opts_.job_id.empty() || opts_.no_progress_runs <= 0) return -1;
  std::string why;
  const std::vector<run_event> events = read_own_run_events_bounded(opts_.notices, &why);
  if (!why.empty()) {
    if (opts_.batch) log("the no-progress breaker cannot judge this run: %s", why.c_str());
    return -1;
  }
  breaker_ = judge_breaker(array_runs(events), this_run(), opts_.no_progress_runs);
  if (breaker_.what == breaker_verdict::end_now) {
    log("job %s of this array ended on no progress (its runs failed without getting past their first step): not "
        "starting %s; fix the crash and submit again",
        breaker_.ended_job.c_str(), adopt > 0 ? "the task" : "the command");
    if (adopt > 0) {
      kill(adopt, SIGKILL);
      waitpid(adopt, nullptr, 0);
    }
    no_progress_ = true;
    if (opts_.batch) {
      cancel_rest_of_array();  // what the run the breaker ended could not
      note_task_end();
    }
    return kNoProgressExit << 8;
  }
  if (breaker_.what != breaker_verdict::armed) return -1;
  if (state_) {
    state_->get().breaker_runs.store(breaker_.count.runs, std::memory_order_relaxed);
    state_->get().breaker_step1.store(breaker_.at_step + 1, std::memory_order_release);
    state_->get().seq.fetch_add(1, std::memory_order_release);
  }
  if (opts_.batch || !state_)
    log("no progress: the last %d runs of this array (jobs %s) failed without getting past step %lld: this run ends "
        "at its first step if it resumes there again (--no-progress-runs=%d)%s",
        breaker_.count.runs, breaker_.count.jobs.c_str(), static_cast<long long>(breaker_.at_step),
        opts_.no_progress_runs, state_ ? "" : "; but the node state was refused above: not in this step");
  return -1;
}

// At the batch step's end: whether the ranks ended this run on the breaker's vote. Then
// the array's pending tasks are cancelled, the --on-notice command runs (no-progress)
// and the job exits 93.
void supervisor::judge_run_end() {
  if (opts_.job_id.empty() || opts_.no_progress_runs <= 0 || no_progress_) return;
  std::string why;
  const std::vector<run_event> events = read_own_run_events_bounded(opts_.notices, &why);
  if (!why.empty() || !breaker_ended_run(events, opts_.job_id, started_ms_)) return;
  no_progress_ = true;
  // This supervisor may not have armed it (its read failed; a step's supervisor did).
  const std::string detail =
      breaker_.what == breaker_verdict::armed
          ? "jobs " + breaker_.count.jobs + " failed without getting past step " + std::to_string(breaker_.at_step) +
                ", and this one resumed there too"
          : std::string("the array's last runs failed without getting past the step this one resumed at");
  log("no progress: %s: this run ends with exit status %d%s", detail.c_str(), kNoProgressExit,
      env_or_empty("SLURM_ARRAY_JOB_ID").empty() ? "" : "; cancelling the array's pending tasks");
  cancel_rest_of_array();
  forgive_crash_loop_nodes();
  hook_.notice("no-progress", deadline_ms_, end_ms_, detail);
}

// scancel --state=PENDING of this array, with one line when it fails.
void supervisor::cancel_rest_of_array() {
  const std::string array = env_or_empty("SLURM_ARRAY_JOB_ID");
  std::string error;
  if (!array.empty() && !cancel_pending_tasks(array, milliseconds(10000), &error))
    log("could not cancel the pending tasks of array %s (%s): each ends at once when it starts", array.c_str(),
        error.c_str());
}

// The runs the breaker counted all crashed before getting past one step: the crash is
// the program's, not the nodes'. Their crash findings leave the bad-node memory (in a
// child: the home may stall), and the log says which nodes were forgiven.
void supervisor::forgive_crash_loop_nodes() {
  const std::string path = bad_nodes_path();
  if (path.empty() || breaker_.count.jobs.empty()) return;
  std::vector<std::string> jobs;
  for (std::string_view j : split(breaker_.count.jobs, ' '))
    if (!j.empty()) jobs.emplace_back(j);
  child_spec spec;
  spec.deadline = milliseconds(10000);
  spec.ignore_signals = opts_.notices;
  spec.work = [path, jobs] {
    std::size_t removed = 0;
    std::vector<bad_node> gone;
    const std::string why = forget_findings(
        path,
        [&jobs](const bad_node& b) {
          return b.reason.rfind("crashed", 0) == 0 && std::find(jobs.begin(), jobs.end(), b.job) != jobs.end();
        },
        &removed, &gone);
    if (!why.empty()) return "!" + why;
    std::string hosts;
    for (const auto& b : gone)
      if (hosts.find(" " + b.host + ",") == std::string::npos) hosts += " " + b.host + ",";
    return hosts;
  };
  const child_result r = run_child(spec);
  if (!r.ok() || (!r.output.empty() && r.output[0] == '!')) {
    log("could not forgive the nodes the crash loop blamed: %s", r.ok() ? r.output.c_str() + 1 : r.error.c_str());
  } else if (!r.output.empty()) {
    std::string hosts = r.output.substr(1, r.output.size() - 2);
    log("forgave%s: the crash repeated at the same step in every counted run, so it is the program's, not the "
        "nodes'",
        (" " + hosts).c_str());
  }
}

// The batch script ended while the job was being preempted (its ranks saved and
// exited within the grace): SLURM before 24.05 would count the job as finished, so put
// it back in the queue now, as preemption with requeue would have at the end of the
// grace. Later releases requeue it themselves, and a second requeue there loops.
void supervisor::requeue_if_preempted() {
  // No preemption seen, by this supervisor (a TERM, an answer) or by a step's on this
  // node: no question to the controller at every batch script's end.
  if (opts_.job_id.empty() || (!term_seen_ && !preempted_ && !was_claimed(preempted_marker()))) return;
  std::string error;
  const auto jt = trainctl::query_job(opts_.job_id, milliseconds(10000), &error);
  if (!jt || !jt->preempting) return;
  if (!jt->requeue) {
    log("the job was preempted and is not requeueable (submit with --requeue to resume it)");
    return;
  }
  if (slurm_requeues_preempted_jobs()) {
    log("the job was preempted: SLURM requeues it to resume");
    return;
  }
  if (requeue_job(opts_.job_id, milliseconds(10000), &error))
    log("the job was preempted: requeued it to resume");
  else
    log("the job was preempted but could not be requeued: %s", error.c_str());
}

// A follower holds the publisher by a pidfd in the loop's epoll set: the publisher's
// death wakes it at once to take the role over, so it need not try every second.
void supervisor::watch_publisher() {
  pid_t holder = 0;
  if (state_ && !pub_) holder = static_cast<pid_t>(state_->get().publisher_id.load(std::memory_order_acquire) >> 32);
  bool dead = false;
  if (publisher_fd_ >= 0) {
    pollfd p{publisher_fd_, POLLIN, 0};
    dead = poll(&p, 1, 0) == 1;
  }
  if (holder == publisher_pid_ && !dead) return;
  if (publisher_fd_ >= 0) {
    epoll_ctl(loop_fd(), EPOLL_CTL_DEL, publisher_fd_, nullptr);
    close(publisher_fd_);
    publisher_fd_ = -1;
  }
  publisher_pid_ = holder;
  if (holder <= 0 || dead || loop_fd() == sigfd_) return;
  publisher_fd_ = static_cast<int>(syscall(SYS_pidfd_open, holder, 0));
  if (publisher_fd_ < 0) return;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = publisher_fd_;
  epoll_ctl(loop_fd(), EPOLL_CTL_ADD, publisher_fd_, &ev);
}

// Removes this step's node state when the last process lets go of it, and what killed
// steps left in trainctl's own state directory (never in a directory given by --state).
void supervisor::close_state() {
  if (publisher_fd_ >= 0) close(publisher_fd_);
  publisher_fd_ = -1;
  pub_.reset();
  health_.set_state(nullptr);
  if (!state_) return;
  state_->release_publisher();
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
  if (opts_.deadline > 0) deadline_ms_ = static_cast<std::int64_t>(opts_.deadline * 1000);
  // The first EndTime read waits a second: a short step never costs an RPC, and the
  // launch stays as fast as without trainctl.
  slots_ = slots_from_env(opts_.job_id);
  next_query_ms_ = in_own_second(slots_, unix_now_ms() + 1000);
  if (deadline_ms_ != 0) schedule_pre_deadline_query();
  open_state();
  started_ms_ = unix_now_ms();
  if (const int status = start_breaker(adopt); status >= 0) {
    close_state();
    return status;
  }
  if (deadline_ms_ != 0) publish_deadline();
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

  child_ = adopt > 0 ? adopt : start_command(argv);
  if (child_ < 0) {
    close_state();
    return 127 << 8;
  }
  health_.started(state_.get(), child_);
  milliseconds health_wait = health_.tick();
  // An adopted child may have ended before this process blocked SIGCHLD (the signal is
  // then lost, not pending): look once before waiting for it.
  reap();
  while (!child_done_) {
    const std::int64_t now_ms = unix_now_ms();
    milliseconds wait(pub_ ? opts_.poll_interval : state_ ? kFollowerWait : milliseconds(1000));
    if (reads_job_itself() && tracks_endtime()) wait = std::min(wait, milliseconds(next_query_ms_ - now_ms));
    if (deadline_ms_ && !deadline_fired_) {
      wait = std::min(wait, milliseconds(deadline_ms_ - now_ms));
      if (!pre_deadline_queried_ && tracks_endtime())
        wait = std::min(wait, milliseconds(pre_deadline_query_ms_ - now_ms));
    }
    if (state_ && !pub_) {  // a follower: the publisher's deadline, a little after it fires it
      const std::int64_t d = state_->get().deadline_ms.load(std::memory_order_acquire);
      if (d != 0 && (seen_flags_ & kFlagDeadline) == 0 && d + 200 > now_ms)
        wait = std::min(wait, milliseconds(d + 200 - now_ms));
    }
    if (query_.running())
      wait = std::min(wait, std::chrono::duration_cast<milliseconds>(query_.deadline() - clock::now()));
    if (notice_pending_) wait = std::min(wait, std::chrono::duration_cast<milliseconds>(notice_by_ - clock::now()));
    if (exit_told_ms_ != 0 && !exit_reported_)
      wait = std::min(wait, milliseconds(exit_told_ms_ + kExitReportAfterMs - now_ms));
    wait = std::min(wait, hook_.tick());
    wait = std::min(wait, health_wait);
    wait = std::max(wait, milliseconds(0));
    if (pub_) {
      pub_->wait_and_refresh(loop_fd(), wait);
    } else {
      pollfd p{loop_fd(), POLLIN, 0};
      poll(&p, 1, static_cast<int>(wait.count()));
    }
    signalfd_siginfo si;
    while (read(sigfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) handle_signal(si);
    reap();  // a SIGCHLD merged with another may not show up on its own
    if (child_done_) break;
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
    if (reads_job_itself() && tracks_endtime() && unix_now_ms() >= next_query_ms_)
      start_query(end_ms_ == 0 ? "first read" : "periodic");
    learn_save_time();
    adopt_end_news();
    check_deadline();
    look_after_state();
    watch_publisher();
    follow_node_flags();
    health_wait = health_.tick();
    if (exit_told_ms_ != 0 && unix_now_ms() - exit_told_ms_ >= kExitReportAfterMs) report_lingering_ranks("");
  }
  if (query_.running()) query_.expire(nullptr);  // not a process the command left behind
  if (opts_.batch) judge_run_end();              // may start the hook
  hook_.finish();                                // before end_leftovers, which would count it as left behind
  health_.abandon();
  health_.command_ended(child_status_);
  end_leftovers();
  learn_save_time();  // the save the ranks made before they exited
  if (opts_.batch) requeue_if_preempted();
  note_compute();
  if (opts_.batch) note_task_end();
  close_state();
  // Quiet on success, as GNU tools are: every rank's task of every job said status 0.
  if (WIFEXITED(child_status_) && WEXITSTATUS(child_status_) != 0)
    log("command exited with status %d", WEXITSTATUS(child_status_));
  else if (WIFSIGNALED(child_status_))
    log("command was killed by SIG%s", signal_name(WTERMSIG(child_status_)).c_str());
  return no_progress_ ? kNoProgressExit << 8 : child_status_;
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
