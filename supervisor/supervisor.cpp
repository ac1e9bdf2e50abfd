#include "supervisor.hpp"

#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
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
#include "gpu_memory.hpp"
#include "node_state.hpp"
#include "notice_hook.hpp"
#include "parse.hpp"
#include "publisher.hpp"
#include "ranks.hpp"
#include "slurm_job.hpp"
#include "stack_dump.hpp"

namespace trainctl {
namespace {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string clock_time(std::int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

class supervisor {
 public:
  supervisor(const supervisor_options& o)
      : opts_(o), hook_(o.on_notice, o.on_notice_timeout, o.shield, [this](const std::string& line) {
          log("%s", line.c_str());
        }) {}
  int run(char* const* argv, pid_t adopt);

 private:
  void log(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  void open_state();
  int pick_log_fd() const;
  void take_publisher_role();
  pid_t start_command(char* const* argv);
  void handle_signal(const signalfd_siginfo& si);
  void reap();
  void query_job(const char* why);
  void fire(std::uint32_t flag, const char* why);
  void relay_to_ranks(const char* why);
  void run_hook(std::uint32_t flag);
  void follow_node_flags();
  void check_deadline();
  void end_leftovers();
  void requeue_if_preempted();
  void check_hang();
  void on_hang(const rank_beat& stale, std::int64_t silent_ms);
  std::string stacks_dir() const;
  void kill_ranks();
  void record_if_crashed();
  void remember_bad(const std::string& host, const std::string& reason, const std::string& gpus = "");
  void close_state();
  bool tracks_endtime() const { return !opts_.job_id.empty() && opts_.graceful_exit.count() > 0; }
  // Whether this supervisor reads EndTime and preemption itself: always, unless another
  // supervisor on the node publishes them into a node state this one shares. No node
  // state problem (a refused file, a lock held by a rank) may cost a notice.
  bool reads_job_itself() const {
    return pub_ || !state_ || state_->get().supervised.load(std::memory_order_acquire) == 0;
  }

  supervisor_options opts_;
  notice_hook hook_;
  std::unique_ptr<node_state_file> state_;
  std::unique_ptr<publisher> pub_;
  int sigfd_ = -1;
  pid_t child_ = 0;
  bool child_done_ = false;
  int child_status_ = 0;
  std::int64_t end_ms_ = 0;  // the job's EndTime as last read
  std::int64_t limit_s_ = -1;
  std::int64_t deadline_ms_ = 0;  // when to ask the ranks to exit; 0: none
  bool deadline_fired_ = false;
  bool preempted_ = false;
  std::uint32_t seen_flags_ = 0;  // node flags already relayed (followers)
  clock::time_point next_query_{};
  std::string lock_problem_;  // reported once
  bool hung_ = false;         // a hang was handled and the ranks have not moved since
  mutable int log_fd_ = -1;   // see pick_log_fd
  bool noticed_ = false;      // a notice or a termination signal came: a failure then is no crash
};

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

std::string log_dir_for(const std::string& given) {
  if (!given.empty()) return given;
  if (!env_or_empty("TRAINCTL_LOG_DIR").empty()) return env_or_empty("TRAINCTL_LOG_DIR");
  if (!env_or_empty("SLURM_SUBMIT_DIR").empty()) return env_or_empty("SLURM_SUBMIT_DIR");
  return ".";
}

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
  const std::string path = opts_.state_path.empty() ? default_state_path() : opts_.state_path;
  try {
    state_ = std::make_unique<node_state_file>(path);
  } catch (const std::exception& e) {
    log("%s; the ranks still get every notice as SIG%s, and each rank watches the switches on its own", e.what(),
        signal_name(opts_.graceful_signal).c_str());
    return;
  }
  setenv("TRAINCTL_STATE", path.c_str(), 1);
  if (!opts_.kill_switch.empty()) state_->register_switch(switch_kind::exit, "kill-switch", opts_.kill_switch);
  if (!opts_.save_switch.empty()) state_->register_switch(switch_kind::save, "save-switch", opts_.save_switch);
  take_publisher_role();
}

void supervisor::take_publisher_role() {
  if (pub_ || !state_) return;
  std::string problem;
  if (!state_->try_become_publisher(&problem)) {
    if (!problem.empty() && problem != lock_problem_)
      log("%s; this supervisor still relays every notice itself", problem.c_str());
    lock_problem_ = problem;
    return;
  }
  state_->get().supervised.store(1);
  publisher_options po;
  po.poll_interval = opts_.poll_interval;
  po.inotify_after = milliseconds(1000);
  pub_ = std::make_unique<publisher>(state_->get(), po);
  pub_->refresh();
}

pid_t supervisor::start_command(char* const* argv) {
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
    if (hook_.reaped(p, status)) continue;
    if (p == child_) {
      child_done_ = true;
      child_status_ = status;
    }
  }
}

void supervisor::relay_to_ranks(const char* why) {
  size_t sent = 0;
  for (const auto& rank : find_rank_procs(getpid(), opts_.launchers, !opts_.batch))
    if (!hook_.owns(rank.pid)) sent += pid_handle(rank).signal(opts_.graceful_signal);
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
  noticed_ = true;
  run_hook(flag);
}

void supervisor::run_hook(std::uint32_t flag) {
  if (flag & kFlagHang) return;  // on_hang runs the hook itself, with the summary
  const char* kind = flag & kFlagPreempted ? "preempted" : flag & kFlagDeadline ? "deadline" : "signal";
  hook_.notice(kind, deadline_ms_, end_ms_, "");
}

void supervisor::query_job(const char* why) {
  if (opts_.job_id.empty() || !reads_job_itself()) return;
  // The batch step usually only runs srun; the steps' supervisors ask the controller.
  // It asks only while the batch script itself runs rank processes, which keeps the
  // controller load at one supervisor per node.
  if (opts_.batch && find_ranks(getpid(), opts_.launchers, false).empty()) {
    next_query_ = clock::now() + opts_.endtime_poll;
    return;
  }
  std::string error;
  const auto jt = trainctl::query_job(opts_.job_id, milliseconds(10000), &error);
  next_query_ = clock::now() + opts_.endtime_poll;
  if (!jt) {
    log("could not read the job's EndTime (%s): %s; keeping %s", why, error.c_str(),
        end_ms_ ? clock_time(end_ms_).c_str() : "no deadline");
    return;
  }
  if (jt->preempting && !preempted_) {
    preempted_ = true;
    log("the job is being preempted (EndTime now %s)", clock_time(jt->end_ms).c_str());
    fire(kFlagPreempted, "preempted");
  }
  if (jt->end_ms != end_ms_ && jt->end_ms != 0) {
    if (end_ms_ != 0)
      log("EndTime moved from %s to %s (TimeLimit %lld s)", clock_time(end_ms_).c_str(), clock_time(jt->end_ms).c_str(),
          static_cast<long long>(jt->limit_s));
    end_ms_ = jt->end_ms;
    limit_s_ = jt->limit_s;
    if (opts_.graceful_exit.count() > 0) {
      const std::int64_t d = end_ms_ - opts_.graceful_exit.count();
      if (d != deadline_ms_ && !deadline_fired_) {
        deadline_ms_ = d;
        log("deadline %s (EndTime %s - graceful exit %s)", clock_time(d).c_str(), clock_time(end_ms_).c_str(),
            format_duration(opts_.graceful_exit).c_str());
      }
    }
  }
}

void supervisor::check_deadline() {
  if (deadline_fired_ || deadline_ms_ == 0 || unix_now_ms() < deadline_ms_) return;
  const std::int64_t before = deadline_ms_;
  if (opts_.graceful_exit.count() > 0) query_job("at the deadline");  // extended meanwhile?
  if (deadline_ms_ > before && unix_now_ms() < deadline_ms_) return;
  deadline_fired_ = true;
  if (pub_) pub_->set_deadline_ms(deadline_ms_);
  fire(kFlagDeadline, "deadline reached");
}

void supervisor::handle_signal(const signalfd_siginfo& si) {
  const int sig = static_cast<int>(si.ssi_signo);
  if (sig == SIGCHLD) {
    reap();
    return;
  }
  if (std::find(opts_.notices.begin(), opts_.notices.end(), sig) != opts_.notices.end() ||
      sig == opts_.graceful_signal) {
    log("received SIG%s (from pid %u)", signal_name(sig).c_str(), si.ssi_pid);
    query_job("after the signal");  // preemption moves EndTime and sets PreemptTime
    if (!preempted_)
      fire(kFlagSignal, "notice");
    else
      relay_to_ranks("notice");
    check_deadline();
    return;
  }
  noticed_ = true;
  if (child_ > 0) kill(child_, sig);  // INT, HUP, QUIT: passed on as they are
}

void supervisor::follow_node_flags() {
  if (!state_ || pub_) return;
  const std::uint32_t flags = state_->get().flags.load(std::memory_order_acquire);
  const std::uint32_t fresh = flags & ~seen_flags_ & (kFlagDeadline | kFlagPreempted);
  if (fresh == 0) return;
  seen_flags_ |= fresh;
  relay_to_ranks(fresh & kFlagPreempted ? "preempted (from the node's publisher)"
                                        : "deadline (from the node's publisher)");
  run_hook(fresh);
}

void supervisor::end_leftovers() {
  // Orphans of the command (workers in their own sessions) were reparented to us.
  for (int round = 0; round < 2; ++round) {
    std::vector<pid_handle> ours;
    for (const auto& p : descendants(getpid(), {}))
      if (p.ours) ours.emplace_back(p);
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

std::string supervisor::stacks_dir() const {
  const std::string job = opts_.job_id.empty() ? "pid" + std::to_string(getpid()) : opts_.job_id;
  return log_dir_for(opts_.log_dir) + "/stacks-" + job;
}

// A rank whose last agreement is older than --hang-timeout is hung. Its peers block in
// the next collective soon after, so every node's supervisor finds its own ranks hung
// at about the same time, and each takes the stacks of its node.
void supervisor::check_hang() {
  if (opts_.hang_timeout.count() == 0 || !state_) return;
  const std::int64_t now = unix_now_ms();
  const rank_beat* stale = nullptr;
  std::int64_t oldest = now;
  for (const auto& b : state_->get().beats) {
    const std::int32_t pid = b.pid.load(std::memory_order_acquire);
    const std::int64_t beat = b.beat_ms.load(std::memory_order_relaxed);
    if (pid <= 0 || beat == 0 || (kill(pid, 0) != 0 && errno == ESRCH)) continue;
    if (now - beat > opts_.hang_timeout.count() && beat < oldest) {
      oldest = beat;
      stale = &b;
    }
  }
  if (stale == nullptr) {
    if (hung_) log("hang: the ranks make progress again");
    hung_ = false;
    return;
  }
  if (!hung_) on_hang(*stale, now - oldest);
  hung_ = true;
}

void supervisor::on_hang(const rank_beat& stale, std::int64_t silent_ms) {
  const auto t0 = clock::now();
  const std::string dir = stacks_dir();
  log("hang: rank %d (pid %d) has not reached an agreement for %s (last at step %lld); taking every rank's stacks",
      stale.rank.load(), stale.pid.load(), format_duration(milliseconds(silent_ms)).c_str(),
      static_cast<long long>(stale.step.load()));
  std::vector<proc_info> ranks;
  for (const auto& r : find_rank_procs(getpid(), opts_.launchers, !opts_.batch))
    if (!hook_.owns(r.pid)) ranks.push_back(r);
  dump_options o;
  o.out_dir = dir;
  o.python_dir = state_->path().substr(0, state_->path().rfind('/'));
  o.stack_signal = stack_signal_from_env();
  o.reason = "hang: no agreement for " + format_duration(milliseconds(silent_ms));
  const auto stacks = dump_stacks(ranks, o);
  std::string summary = summarize(stacks);
  log("hang: stacks of %zu rank%s in %s/ after %lld ms: %s", stacks.size(), stacks.size() == 1 ? "" : "s", dir.c_str(),
      static_cast<long long>(std::chrono::duration_cast<milliseconds>(clock::now() - t0).count()), summary.c_str());
  // The first node waits a little for the other nodes' files and says where the whole
  // job is stuck.
  const std::string node = env_or_empty("SLURM_NODEID");
  const int world = ranks.empty() ? 0 : std::atoi(proc_environ_value(ranks[0].pid, "WORLD_SIZE").c_str());
  if ((node.empty() || node == "0") && world > static_cast<int>(stacks.size())) {
    // Files of this stall only: an earlier dump (--dump-stacks) left files of every rank.
    const std::int64_t stall_began = (unix_now_ms() - silent_ms) / 1000;
    std::vector<rank_stack> all = read_dumps(dir, stall_began);
    for (int i = 0; i < 300 && static_cast<int>(all.size()) < world; ++i) {
      usleep(100000);
      all = read_dumps(dir, stall_began);
    }
    summary = summarize(all);
    log("hang: the whole job (%zu of %d ranks dumped): %s", all.size(), world, summary.c_str());
    for (const auto& h : suspect_hosts(all)) remember_bad(h, "hung (stacks in " + dir + ")");
  }
  if (FILE* f = std::fopen((dir + "/summary.txt").c_str(), "a")) {
    std::fprintf(f, "%s %s\n", clock_time(unix_now_ms()).c_str(), summary.c_str());
    std::fclose(f);
  }
  hook_.notice("hang", deadline_ms_, end_ms_, summary);
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

void supervisor::remember_bad(const std::string& host, const std::string& reason, const std::string& gpus) {
  bad_node b;
  b.when = unix_now_ms() / 1000;
  b.host = host;
  b.job = opts_.job_id.empty() ? "-" : opts_.job_id;
  b.reason = reason;
  b.gpus = gpus;
  const std::string path = bad_nodes_path();
  const std::string why = record_bad_node(path, b);
  if (why.empty())
    log("remembered %s as a bad node (%s) in %s", host.c_str(), reason.c_str(), path.c_str());
  else
    log("could not remember %s as a bad node: %s", host.c_str(), why.c_str());
}

// A step that failed on its own (no notice, no termination signal, no hang handled) is
// a crash; the node whose command failed first is the suspect, since the others fail
// after it, when their collectives lose the crashed rank. "First" is an exclusive
// create in the log directory, which every node shares.
void supervisor::record_if_crashed() {
  const int st = child_status_;
  const bool failed = (WIFEXITED(st) && WEXITSTATUS(st) != 0) || WIFSIGNALED(st);
  if (!failed || opts_.batch || noticed_ || hung_ || opts_.job_id.empty()) return;
  const std::string restart = env_or_empty("SLURM_RESTART_COUNT").empty() ? "0" : env_or_empty("SLURM_RESTART_COUNT");
  const std::string claim = log_dir_for(opts_.log_dir) + "/.trainctl-first-failure-" + opts_.job_id + "." + restart;
  const int fd = open(claim.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return;  // another node failed first (or the directory is not writable)
  close(fd);
  const std::string how =
      WIFEXITED(st) ? "exit status " + std::to_string(WEXITSTATUS(st)) : "SIG" + signal_name(WTERMSIG(st));
  remember_bad(node_name(), "crashed (" + how + ", the first node of the job to fail)", gpu_uuids());
}

// Everything below this supervisor but the notice hook: a hung rank ignores polite
// signals, and its stacks are already on disk.
void supervisor::kill_ranks() {
  for (const auto& p : descendants(getpid(), {}))
    if (p.ours && !hook_.owns(p.pid)) pid_handle(p).signal(SIGKILL);
}

// The batch script ended while the job was being preempted (its ranks saved and
// exited within the grace): SLURM would count the job as finished, so put it back in
// the queue now, as preemption with requeue would have at the end of the grace.
void supervisor::requeue_if_preempted() {
  if (opts_.job_id.empty()) return;
  std::string error;
  const auto jt = trainctl::query_job(opts_.job_id, milliseconds(10000), &error);
  if (!jt || !jt->preempting) return;
  if (!jt->requeue) {
    log("the job was preempted and is not requeueable (submit with --requeue to resume it)");
    return;
  }
  if (requeue_job(opts_.job_id, milliseconds(10000), &error))
    log("the job was preempted: requeued it to resume");
  else
    log("the job was preempted but could not be requeued: %s", error.c_str());
}

// Removes this step's node state when the last process lets go of it, and what killed
// steps left in trainctl's own state directory (never in a directory given by --state).
void supervisor::close_state() {
  pub_.reset();
  if (!state_) return;
  state_->release_publisher();
  state_->unlink_if_last();
  const std::string dir = state_->path().substr(0, state_->path().rfind('/'));
  state_.reset();
  if (dir == state_dir()) sweep_stale_state(dir);
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
  next_query_ = clock::now() + milliseconds(1000);
  open_state();
  if (!opts_.kill_switch.empty()) setenv("KILL_SWITCH", opts_.kill_switch.c_str(), 1);
  if (!opts_.save_switch.empty()) setenv("SAVE_SWITCH", opts_.save_switch.c_str(), 1);
  const std::string sigs = signal_name(opts_.graceful_signal) + ",TERM";
  setenv("TRAINCTL_SIGNALS", sigs.c_str(), 0);
  setenv("TRAINCTL_SUPERVISED", "1", 1);  // a batch script can tell it already runs under one
  setenv("TRAINCTL_SUPERVISOR_PID", std::to_string(getpid()).c_str(), 1);  // ranks allow its stack readers
  setenv("TRAINCTL_LOG_DIR", log_dir_for(opts_.log_dir).c_str(), 1);       // slow_nodes beside the stacks
  if (!bad_nodes_path().empty()) setenv("TRAINCTL_BAD_NODES", bad_nodes_path().c_str(), 1);
  if (opts_.hang_timeout.count() > 0 && !state_)
    log("--hang-timeout needs the node state, which was refused above: hangs go undetected in this step");

  child_ = adopt > 0 ? adopt : start_command(argv);
  if (child_ < 0) {
    close_state();
    return 127 << 8;
  }
  // An adopted child may have ended before this process blocked SIGCHLD (the signal is
  // then lost, not pending): look once before waiting for it.
  reap();
  while (!child_done_) {
    milliseconds wait(pub_ ? opts_.poll_interval : milliseconds(1000));
    if (reads_job_itself() && tracks_endtime())
      wait = std::min(wait, std::chrono::duration_cast<milliseconds>(next_query_ - clock::now()));
    if (deadline_ms_ && !deadline_fired_) wait = std::min(wait, milliseconds(deadline_ms_ - unix_now_ms()));
    wait = std::min(wait, hook_.tick());
    if (opts_.hang_timeout.count() > 0)
      wait = std::min(wait,
                      std::max(milliseconds(1000), std::chrono::duration_cast<milliseconds>(opts_.hang_timeout / 10)));
    wait = std::max(wait, milliseconds(0));
    if (pub_) {
      pub_->wait_and_refresh(sigfd_, wait);
    } else {
      pollfd p{sigfd_, POLLIN, 0};
      poll(&p, 1, static_cast<int>(wait.count()));
    }
    signalfd_siginfo si;
    while (read(sigfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) handle_signal(si);
    reap();  // a SIGCHLD merged with another may not show up on its own
    if (child_done_) break;
    // EndTime matters only for a deadline; notices query on their own.
    if (reads_job_itself() && tracks_endtime() && clock::now() >= next_query_) query_job("periodic");
    check_deadline();
    take_publisher_role();
    follow_node_flags();
    check_hang();
  }
  hook_.finish();  // before end_leftovers, which would count it as left behind
  record_if_crashed();
  end_leftovers();
  if (opts_.batch) requeue_if_preempted();
  close_state();
  if (WIFEXITED(child_status_))
    log("command exited with status %d", WEXITSTATUS(child_status_));
  else if (WIFSIGNALED(child_status_))
    log("command was killed by SIG%s", signal_name(WTERMSIG(child_status_)).c_str());
  return child_status_;
}

}  // namespace

int dump_job_stacks_here(const std::string& job_id, std::string out_dir, const std::string& reason) {
  const std::vector<std::string> launchers{"torchrun", "accelerate", "deepspeed", "mpirun", "mpiexec", "srun", "orted"};
  // Only this node's: where nodes share a host (containers, test beds) the others'
  // ranks are visible here too.
  const std::string node = env_or_empty("SLURMD_NODENAME");
  std::vector<proc_info> ranks;
  for (const auto& r : find_job_rank_procs(job_id, launchers))
    if (node.empty() || proc_environ_value(r.pid, "SLURMD_NODENAME") == node) ranks.push_back(r);
  // Unless told where, beside the job's own hang stacks: its ranks' TRAINCTL_LOG_DIR
  // (the template sets it inside the job, where a login shell cannot see it).
  if (out_dir.compare(0, 9, "fallback:") == 0) {
    const std::string logs = ranks.empty() ? "" : proc_environ_value(ranks[0].pid, "TRAINCTL_LOG_DIR");
    out_dir = logs.empty() ? out_dir.substr(9) : logs + "/stacks-" + job_id;
  }
  dump_options o;
  o.out_dir = out_dir;
  o.python_dir = state_dir();
  o.stack_signal = stack_signal_from_env();
  o.reason = reason;
  for (const auto& s : dump_stacks(ranks, o))
    std::printf("stack rank=%d pid=%d host=%s dir=%s frame=%s\n", s.rank, s.pid, s.host.c_str(), out_dir.c_str(),
                s.frame.c_str());
  std::fflush(stdout);
  return 0;
}

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
