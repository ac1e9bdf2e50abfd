#include "task_supervisor.hpp"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "bad_nodes.hpp"
#include "beat_fields.hpp"
#include "build_id.hpp"
#include "deadline_fields.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "flight_recorder.hpp"
#include "node_names.hpp"
#include "node_state_file.hpp"
#include "notice_fields.hpp"
#include "parse.hpp"
#include "publisher.hpp"
#include "publisher_fields.hpp"
#include "query_schedule.hpp"
#include "rank_views.hpp"
#include "run_id.hpp"
#include "run_identity.hpp"
#include "run_progress.hpp"
#include "save_fields.hpp"
#include "snapshot_writeout.hpp"
#include "stack_dump.hpp"
#include "state_dir.hpp"
#include "supervised_step.hpp"

namespace trainctl {
namespace {

using std::chrono::milliseconds;

// Whether rank process `pid` waits at its end for its save's write (its beat says so).
bool waits_for_writes(const node_state& ns, pid_t pid) {
  if (!has_header(ns)) return false;
  for (const rank_beat& b : ns.beats)
    if (beat_fields::read(b).pid == pid) return save_fields::read(b).waiting;
  return false;
}

// How long an idle follower (a supervisor that does not publish the node state) sleeps:
// the publisher's death wakes it at once (a pidfd), the deadline at its time.
constexpr milliseconds kFollowerWait{60000};

}  // namespace

task_supervisor::task_supervisor(const supervisor_options& o)
    : opts_(o),
      log_(o.log_prefix, o.job_id, [this] { return procs_.child(); }),
      hook_(o.on_notice, o.on_notice_timeout, o.shield,
            [this](const std::string& line) { log_.line("%s", line.c_str()); }),
      health_(
          o, [this](const std::string& line) { log_.line("%s", line.c_str()); },
          [this](const std::string& summary) { after_hang_dump(summary); }),
      end_(opts_, log_),
      procs_(
          opts_, [this](pid_t p) { return is_helper(p); }, log_),
      dl_(
          unix_now_ms, [this](std::int64_t limit_s) { return graceful_exit(limit_s); }, slots_from_env(o.job_id),
          o.endtime_poll.count()) {
  health_.set_owned_elsewhere([this](pid_t p) { return hook_.owns(p) || p == query_.pid(); });
  procs_.set_writing([this](pid_t p) { return state_ && waits_for_writes(state_->get(), p); });
  health_.set_records([this] { return publishes(); });
}

int task_supervisor::run(char* const* argv, pid_t adopt, int run_id_fd) {
  if (const int status = start(argv, adopt, run_id_fd); status >= 0) return status;
  milliseconds health_wait = health_.tick();
  // An adopted child may have ended before this process blocked SIGCHLD (the signal is
  // then lost, not pending): look once before waiting for it.
  reap();
  while (!procs_.done()) {
    const milliseconds wait = next_wake(health_wait);
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
    health_wait = turn();
  }
  return finish();
}

// Everything before the loop: the signals it reads, the deadline given, the node state,
// the breaker, the environment, then the command. -1 when it runs, else the wait status
// to end with (nothing started).
int task_supervisor::start(char* const* argv, pid_t adopt, int run_id_fd) {
  if (!opts_.kill_switch.empty()) {
    struct stat st {};
    if (stat(opts_.kill_switch.c_str(), &st) == 0) {
      log_.line("kill switch %s exists: not starting %s (remove it to run again)", opts_.kill_switch.c_str(),
                adopt > 0 ? "the task" : argv[0]);
      if (adopt > 0) {
        kill(adopt, SIGKILL);
        waitpid(adopt, nullptr, 0);
      }
      if (holds_array()) end_.hold_rest_of_array(opts_.kill_switch);
      return 0;
    }
  }
  // Before the breaker reads the run events: the line this appends marks where an
  // earlier array of this id ends.
  const std::string run = decided_run_id();
  if (run_id_fd >= 0) {  // the plugin's task waits for it
    const std::string line = run + "\n";
    // A socket: a task that stopped waiting is an error here, never a SIGPIPE.
    if (send(run_id_fd, line.data(), line.size(), MSG_NOSIGNAL) < 0)
      log_.line("cannot hand the run id to the task: %s", std::strerror(errno));
    close(run_id_fd);
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
    log_.line("signalfd: %s", std::strerror(errno));
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
    const std::string array = env_text(env_var::kSlurmArrayJobId);
    std::string problem;
    auto_ = std::make_unique<graceful_auto>(array.empty() ? opts_.job_id : array, env_text(env_var::kSlurmJobName),
                                            opts_.job_id, node_name(), &problem);
    if (!problem.empty()) log_.line("--graceful-exit=auto: %s", problem.c_str());
  }
  export_environment(run);
  if (!opts_.metrics.dir.empty()) open_metrics(run);
  if (opts_.hang.timeout.count() != 0 && !state_)
    log_.line("--hang-timeout needs the node state, which was refused above: hangs go undetected in this step");
  if (adopt > 0) {
    procs_.adopt(adopt);
  } else if (procs_.start(argv) < 0) {
    close_state();
    return 127 << 8;
  }
  health_.started(state_.get(), procs_.child());
  return -1;
}

// The run id the command and the job's steps get: the batch script's supervisor decides
// it (run_identity.hpp); another takes the one it inherits, or the job's.
std::string task_supervisor::decided_run_id() {
  const std::string own = env_text(kRunIdVar);
  std::string why;
  const bool asks = opts_.batch && !opts_.job_id.empty() && !valid_run_id(own);
  if (asks && env_set(env_var::kTrainctlLogQueries))  // for the RPC tests
    log_.line("asked the controller for the job's submit time (the run id) at %lld ms",
              static_cast<long long>(unix_now_ms()));
  std::string id = asks ? decide_run_id(opts_.job_id, milliseconds(3000), &why) : run_id(env_text);
  if (!own.empty() && own != id)
    log_.line("%s is not a run id (accepted: 1-64 of letters, digits, '_', '.', '-'): the ranks get '%s'", kRunIdVar,
              id.c_str());
  if (!why.empty()) log_.line("the run id is %s: %s", id.c_str(), why.c_str());
  return id;
}

// What the command and its ranks find in their environment.
void task_supervisor::export_environment(const std::string& run) {
  if (!opts_.kill_switch.empty()) setenv("KILL_SWITCH", opts_.kill_switch.c_str(), 1);
  if (!opts_.save_switch.empty()) setenv("SAVE_SWITCH", opts_.save_switch.c_str(), 1);
  const std::string sigs = signal_name(opts_.graceful_signal) + ",TERM";
  setenv("TRAINCTL_SIGNALS", sigs.c_str(), 0);
  // A batch script can tell it already runs under one; trainctl-run adds no second one.
  setenv(kSupervisedVar, supervised_step([](const char* name) { return env_text(name); }).c_str(), 1);
  setenv("TRAINCTL_SUPERVISOR_PID", std::to_string(getpid()).c_str(), 1);  // ranks allow its stack readers
  setenv(kSupervisorBuildVar, TRAINCTL_BUILD_TEXT, 1);                     // a rank's library of another layout says so
  if (!run.empty()) setenv(kRunIdVar, run.c_str(), 1);
  setenv("TRAINCTL_LOG_DIR", resolve_log_dir(opts_.log_dir).c_str(), 1);  // slow_nodes beside the stacks
  if (!bad_nodes_path().empty()) setenv("TRAINCTL_BAD_NODES", bad_nodes_path().c_str(), 1);
}

// The loop's next wake: the soonest of what falls due (the publisher's poll, the EndTime
// read, the deadline, the publisher's deadline for a follower, a query's or a notice's
// limit, the lingering ranks' report, the hook's limit, the health's next look).
milliseconds task_supervisor::next_wake(milliseconds health_wait) {
  const std::int64_t now_ms = unix_now_ms();
  milliseconds wait(publishes() ? opts_.poll_interval : state_ ? kFollowerWait : milliseconds(1000));
  if (reads_job_itself() && tracks_endtime()) wait = std::min(wait, milliseconds(dl_.next_read_ms() - now_ms));
  wait = dl_.wait(tracks_endtime(), wait);
  if (state_ && !publishes()) {  // a follower: the publisher's deadline, a little after it fires it
    const std::int64_t d = deadline_fields::deadline_ms(state_->get());
    if (d != 0 && (seen_flags_ & kFlagDeadline) == 0 && d + 200 > now_ms)
      wait = std::min(wait, milliseconds(d + 200 - now_ms));
  }
  if (query_.running())
    wait = std::min(wait, std::chrono::duration_cast<milliseconds>(query_.deadline() - clock::now()));
  if (notice_by_) wait = std::min(wait, std::chrono::duration_cast<milliseconds>(*notice_by_ - clock::now()));
  wait = procs_.wait(wait);
  wait = std::min({wait, hook_.tick(), health_wait});
  return std::max(wait, milliseconds(0));
}

milliseconds task_supervisor::turn() {
  expire_waits();
  // EndTime matters only for a deadline; notices query on their own.
  if (reads_job_itself() && tracks_endtime() && unix_now_ms() >= dl_.next_read_ms())
    start_query(dl_.end_ms() == 0 ? "first read" : "periodic");
  learn_save_time();
  adopt_end_news();
  check_deadline();
  look_after_state();
  watch_publisher();
  follow_node_flags();
  const milliseconds health_wait = health_.tick();
  procs_.tick();
  write_metrics();
  return health_wait;
}

// --metrics-dir (task_metrics.hpp): refused in one line, never a reason not to train.
void task_supervisor::open_metrics(const std::string& run) {
  metrics_identity id;
  id.job = opts_.job_id.empty() ? "none" : opts_.job_id;
  id.array_task = env_text(env_var::kSlurmArrayTaskId);
  id.user = env_text(env_var::kSlurmJobUser);
  if (id.user.empty()) id.user = std::to_string(getuid());
  id.run_id = run;
  id.node = env_text(env_var::kSlurmdNodename);
  if (id.node.empty()) id.node = node_name();
  id.step = opts_.batch ? "batch" : env_text(env_var::kSlurmStepId);
  std::string why;
  metrics_ = task_metrics::open(opts_.metrics.dir, opts_.metrics.interval, std::move(id), &why);
  if (!metrics_) log_.line("--metrics-dir %s %s: no metrics from this task", opts_.metrics.dir.c_str(), why.c_str());
  if (metrics_ && !state_) log_.line("--metrics-dir needs the node state, which was refused above: no metrics");
  // The job's goodput, once a job: from the first node's file.
  if (metrics_ && !opts_.batch && env_text(env_var::kSlurmNodeid) == "0" && !opts_.job_id.empty()) {
    task_record task;
    task.job_id = opts_.job_id;
    const std::string array = env_text(env_var::kSlurmArrayJobId);
    task.name = array.empty() ? opts_.job_id : array + "_" + env_text(env_var::kSlurmArrayTaskId);
    task.user = env_text(env_var::kSlurmJobUser);
    std::string nodes = env_text(env_var::kSlurmJobNumNodes);
    if (nodes.empty()) nodes = env_text(env_var::kSlurmNnodes);
    task.nodes = all_digits(nodes, 5) ? std::stoi(nodes) : 1;
    auto goodput = std::make_unique<live_report>(task, own_run_events_path());
    // SLURM 23.02+ says the run's Start; before, the controller's answer does (on_job_answer).
    const std::string start = env_text(env_var::kSlurmJobStartTime);
    if (all_digits(start, 15)) goodput->started(std::stoll(start) * 1000);
    metrics_->add_goodput(std::move(goodput));
  }
}

// The node's file is the publisher's: the figures are the node state's, one copy a node.
void task_supervisor::write_metrics() {
  if (!metrics_ || !state_ || !publishes()) return;
  const std::string error = metrics_->update(state_->get(), unix_now_ms());
  if (!error.empty()) log_.line("--metrics-dir: cannot write %s (tried again every interval)", error.c_str());
  const std::string problem = metrics_->goodput() != nullptr ? metrics_->goodput()->take_problem() : "";
  if (!problem.empty()) log_.line("--metrics-dir: no goodput: %s", problem.c_str());
}

// After the command ended: the breaker's verdict, the hook, leftovers, the records of
// this run, the node state; the wait status this process exits with.
int task_supervisor::finish() {
  if (query_.running()) query_.expire(nullptr);  // not a process the command left behind
  health_.abandon();
  // Before the breaker's verdict, which reads how this run died (a kill from outside counts for nothing).
  if (const auto death = health_.command_ended(procs_.status())) end_.note_death(*death);
  if (opts_.batch) {
    if (const std::optional<std::string> detail = end_.judge(procs_.status(), term_seen_ || preempted_))
      hook_.notice("no-progress", dl_.deadline_ms(), dl_.end_ms(), *detail);  // before hook_.finish()
  }
  hook_.finish();  // before end_leftovers, which would count it as left behind
  procs_.end_leftovers();
  settle_rank_files();  // every rank process is gone: no slot is being written, no FIFO listened on
  learn_save_time();    // the save the ranks made before they exited
  if (opts_.batch) end_.requeue_if_preempted(term_seen_ || preempted_);
  // The switch as the node state had it last (no stat of a shared path here).
  if (holds_array() && state_ && (notice_fields::flags(state_->get()) & kFlagExitSwitch) != 0)
    end_.hold_rest_of_array(opts_.kill_switch);
  if (state_ && publishes() && state_->damage().empty()) {
    end_.note_commits(state_->get());
    if (env_set(env_var::kSlurmJobId)) end_.note_compute(state_->get());
  }
  if (opts_.batch) end_.note_task_end(procs_.status(), preempted_);
  metrics_.reset();  // its file goes with the task
  close_state();
  // Quiet on success, as GNU tools are: every rank's task of every job said status 0.
  if (WIFEXITED(procs_.status()) && WEXITSTATUS(procs_.status()) != 0)
    log_.line("command exited with status %d", WEXITSTATUS(procs_.status()));
  else if (WIFSIGNALED(procs_.status()))
    log_.line("command was killed by SIG%s", signal_name(WTERMSIG(procs_.status())).c_str());
  return end_.no_progress() ? kNoProgressExit << 8 : procs_.status();
}

// The ranks' files beside the node state, as the task ends: their flight recorder's
// FIFOs and answers removed; their snapshots in memory written out as saves when a rank
// died, then gone (snapshot_writeout.hpp), bounded by the job's end, and by SLURM's
// KillWait once it ends the step (a peer's death): 20 s, within its default of 30.
void task_supervisor::settle_rank_files() {
  if (!state_) return;
  const std::int64_t now = unix_now_ms();
  std::int64_t bound = now + (term_seen_ ? 20000 : 60000);
  if (dl_.end_ms() > 0) bound = std::min(bound, dl_.end_ms() - 1000);
  // The ranks' flight-recorder files too: a rank ended by a signal leaves them.
  if (state_->damage().empty())
    for (const rank_view& v : newest_rank_views(state_->get()))
      if (v.pid > 0) remove_flight_recorder_files(state_->path().substr(0, state_->path().rfind('/')), v.pid);
  const snapshot_writeout w = write_out_snapshots(state_->path(), procs_.status() != 0, bound);
  if (w.ranks > 0)
    log_.line("a rank died: the snapshots in memory of %d rank%s written out as saves (steps %lld to %lld)", w.ranks,
              w.ranks == 1 ? "" : "s", static_cast<long long>(w.oldest), static_cast<long long>(w.newest));
  for (const auto& f : w.failed)
    log_.line("rank %lld's snapshot of step %lld is not written out, nothing committed: %s",
              static_cast<long long>(f.rank), static_cast<long long>(f.step), f.why.c_str());
  if (w.older > 0)
    log_.line("%d %s not written out: not newer than the save committed at step %lld", w.older,
              w.older == 1 ? "snapshot is" : "snapshots are", static_cast<long long>(w.older_than));
  end_.note_snapshots(w.newest, w.oldest, w.ranks);
}

void task_supervisor::open_state() {
  if (opts_.state_path.empty()) {
    std::string note;
    state_dir(&note);
    if (!note.empty()) log_.line("%s", note.c_str());
  }
  const std::string path = opts_.state_path.empty() ? default_state_path() : opts_.state_path;
  try {
    state_ = std::make_unique<node_state_file>(path);
  } catch (const std::exception& e) {
    log_.line("%s; the ranks still get every notice as SIG%s, and each rank watches the switches on its own", e.what(),
              signal_name(opts_.graceful_signal).c_str());
    return;
  }
  setenv(env_var::kTrainctlState, path.c_str(), 1);
  // torch's flight recorder on for the ranks, where the user left it unset: the hang dump
  // reads it, and its files go to this private directory, not to torch's /tmp defaults.
  for (const auto& [name, value] : flight_recorder_env(path.substr(0, path.rfind('/'))))
    setenv(name.c_str(), value.c_str(), 0);
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

void task_supervisor::take_publisher_role() {
  if (!role_) return;
  const node_role::turn t = role_->look();
  if (t.lost)
    log_.line(
        "another process took over publishing the node state while this supervisor was stopped or busy; it "
        "relays notices and follows the node state now");
  if (!t.problem.empty()) log_.line("%s; this supervisor still relays every notice itself", t.problem.c_str());
  if (!t.took) return;
  if (t.taken_from != 0)
    log_.line("the node's publisher (pid %d) stopped refreshing the node state; this supervisor publishes it now",
              t.taken_from);
  // A follower that takes over goes on from the deadline its predecessor published and
  // reads EndTime in its own slot of the period: a takeover costs the controller nothing.
  const std::int64_t published = deadline_fields::deadline_ms(state_->get());
  dl_.adopt(published);
  if (dl_.next_read_ms() != 0 && published != 0) dl_.schedule_periodic_read();
  publisher_fields::set_supervised(state_->get());
}

void task_supervisor::reap() {
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

// The node state's health and the publisher role, once per turn of the loop.
void task_supervisor::look_after_state() {
  if (!state_) return;
  const std::string damage = state_->damage();
  if (!damage.empty()) {
    log_.line(
        "%s; this supervisor stops using it: the ranks still get every notice as SIG%s and watch the switches on "
        "their own%s",
        damage.c_str(), signal_name(opts_.graceful_signal).c_str(),
        opts_.hang.timeout.count() != 0 ? ", and hangs are no longer detected in this step" : "");
    role_.reset();
    health_.state_damaged(damage);
    state_.reset();  // the ranks still hold it: the file stays for them
    return;
  }
  if (!state_removed_said_ && state_->removed()) {
    state_removed_said_ = true;
    log_.line(
        "node state %s was removed (systemd-logind's RemoveIPC=yes does this when the user's last login session on "
        "the node ends); the running ranks keep sharing it, and ranks started from now on find it through this "
        "supervisor",
        state_->path().c_str());
  }
  take_publisher_role();
  if (procs_.told_ms() == 0 && (notice_fields::flags(state_->get()) & kFlagExitSwitch) != 0)
    procs_.told_to_exit("kill switch");
}

// A follower holds the publisher by a pidfd in the loop's epoll set: the publisher's
// death wakes it at once to take the role over, so it need not try every second.
void task_supervisor::watch_publisher() {
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
void task_supervisor::close_state() {
  if (role_) role_->give_up();
  role_.reset();
  health_.set_state(nullptr);
  if (!state_) return;
  state_->unlink_if_last();
  const std::string dir = state_->path().substr(0, state_->path().rfind('/'));
  state_.reset();
  if (dir == state_dir()) sweep_stale_state(dir);
}

// Everything below this supervisor but its own helpers: a hung rank ignores polite
// signals, and its stacks are already on disk.
void task_supervisor::kill_ranks() {
  health_.trainctl_ended_ranks();
  procs_.kill_all();
}

// What a hang's dump ends in: the hook (with where the job is stuck), then the action.
void task_supervisor::after_hang_dump(const std::string& summary) {
  hook_.notice("hang", dl_.deadline_ms(), dl_.end_ms(), summary);
  end_.note_hang(health_.stall_ms(), summary);
  switch (opts_.hang.action) {
    case hang_action::alert:
      break;
    case hang_action::save_exit:
      log_.line("hang: asking the ranks to save and exit (--hang-action=save-exit)");
      fire(kFlagHang, "hang");
      break;
    case hang_action::end_step:
      log_.line("hang: ending the step so that the next array task or requeue resumes (--hang-action=end-step)");
      kill_ranks();
      break;
  }
}

int task_supervisor::loop_fd() {
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

}  // namespace trainctl
