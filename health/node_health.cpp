#include "node_health.hpp"

#include <dirent.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "beat_fields.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "error_fields.hpp"
#include "gpu_memory.hpp"
#include "hang_budget.hpp"
#include "node_state.hpp"
#include "node_state_file.hpp"
#include "parse.hpp"
#include "ranks.hpp"
#include "save_fields.hpp"
#include "save_times.hpp"
#include "stack_dump.hpp"
#include "state_dir.hpp"
#include "straggler_record.hpp"
#include "user_paths.hpp"

namespace trainctl {
namespace {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// How often the node state's heartbeat slots are looked at for new ranks when nothing
// else wakes the supervisor: ranks say when they arrive (SIGCHLD), so this is a fallback.
constexpr milliseconds kNewRankLook{60000};

std::string read_small(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string s;
  std::getline(in, s, '\0');
  return s;
}

}  // namespace

std::string resolve_log_dir(const std::string& given) {
  if (!given.empty()) return given;
  const std::string dir = job_log_dir();
  return !dir.empty() ? dir : ".";
}

node_health::node_health(const supervisor_options& o, log_fn log, hang_fn on_hang)
    : opts_(o),
      log_(std::move(log)),
      on_hang_(std::move(on_hang)),
      budgets_(opts_, [this](const std::string& line) { log_(line); }),
      stragglers_(opts_, [this](const std::string& line) { log_(line); }),
      culprit_(opts_, dir_, [this](const std::string& line) { log_(line); }) {
  dir_.dir = resolve_log_dir(o.log_dir);
}

node_health::~node_health() = default;

void node_health::started(node_state_file* state, pid_t command) {
  state_ = state;
  command_ = command;
  self_ = getpid();
  culprit_.started(self_);
  epoll_fd_.reset(epoll_create1(EPOLL_CLOEXEC));
  const std::string cmd = read_small("/proc/" + std::to_string(command) + "/cmdline");
  command_is_launcher_ = cmdline_names_launcher(cmd, opts_.launchers);
  next_start_scan_ = clock::now() + milliseconds(1000);
  // The log directory may be on a mount that stalls: looked at in a child.
  child_spec spec;
  const std::string dir = dir_.dir;
  // The hang budgets' store (on the shared home, which may stall too): read here.
  const std::string times = opts_.hang.timeout.count() != 0 ? budgets_.store_path() : "";
  const std::string by_name = times.empty() ? "" : save_times_path_for_name(env_text(env_var::kSlurmJobName));
  spec.work = [dir, times, by_name] {
    bool group = false;
    std::string why = prepare_log_dir(dir, &group), note;
    if (why.empty()) evidence_root(dir, group, &why, &note);  // made now, and a squatted name said at the start
    std::string out = std::string(group ? "group\n" : "private\n") + (why.empty() ? "" : "problem " + why + "\n") +
                      (note.empty() ? "" : "note " + note + "\n");
    std::string store_why, ignored;
    std::map<std::string, std::int64_t> learnt;
    if (!times.empty()) learnt = longest_recorded_phases(times, &store_why);
    // And what a drill of this job name measured (trainctl drill): the longer of the two.
    if (!by_name.empty())
      for (const auto& [name, ms] : longest_recorded_phases(by_name, &ignored))
        learnt[name] = std::max(learnt[name], ms);
    for (const auto& [name, ms] : learnt) out += "learnt " + name + " " + std::to_string(ms) + "\n";
    if (!store_why.empty()) out += "store " + store_why + "\n";
    return out;
  };
  spec.ignore_signals = opts_.notices;
  spec.ignore_signals.push_back(opts_.graceful_signal);
  check_ = std::make_unique<started_child>(spec);
  check_by_ = clock::now() + milliseconds(10000);
}

bool node_health::owns(pid_t pid) const {
  if (check_ != nullptr && check_->pid() > 0 && (pid == check_->pid() || getpgid(pid) == check_->pid())) return true;
  for (const pid_t writer : {dump_.pid(), stragglers_.writer_pid(), culprit_.writer_pid(), culprit_.presence_pid()})
    if (writer > 0 && (pid == writer || getpgid(pid) == writer)) return true;
  return false;
}

void node_health::abandon() {
  dump_.abandon();
  if (check_) check_->abandon();  // the evidence writer is let finish (settle_evidence)
}

bool node_health::reaped(pid_t pid, int status) {
  if (check_ && pid == check_->pid()) {
    const child_result r = check_->finish(status);
    check_.reset();
    dir_.checked = true;
    dir_.group = r.output.compare(0, 6, "group\n") == 0;
    const size_t p = r.output.find("problem ");
    if (p != std::string::npos) dir_.problem = r.output.substr(p + 8, r.output.find('\n', p) - p - 8);
    if (!r.ok()) dir_.problem = "log directory " + dir_.dir + ": the check failed (" + r.error + ")";
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
      char name[40] = {};
      long long ms = 0;
      if (std::sscanf(line.c_str(), "learnt %39s %lld", name, &ms) == 2 && ms > 0) budgets_.take_recorded(name, ms);
      if (line.compare(0, 5, "note ") == 0) log(line.substr(5));
      if (line.compare(0, 6, "store ") == 0)
        log("hang: the budgets learnt in this job array cannot be read (" + line.substr(6) + "): first-time budgets");
    }
    if (!dir_.problem.empty())
      log(dir_.problem + ": hang stacks, slow_nodes and crash evidence will not be saved until it is fixed");
    return true;
  }
  if (culprit_.reaped(pid, status)) return true;
  if (stragglers_.reaped(pid, status)) return true;
  if (const std::optional<hang_dump_report> report = dump_.reaped(pid, status)) {
    for (const auto& line : report->lines) log(line);
    on_hang_(report->summary);
    return true;
  }
  return false;
}

std::chrono::milliseconds node_health::tick() {
  const auto now = clock::now();
  if (check_ && now >= check_by_) {
    check_->abandon();
    check_.reset();
    dir_.checked = true;
    dir_.problem = "log directory " + dir_.dir + " did not answer within 10 s (a stalled mount?)";
    log(dir_.problem + ": hang stacks will not be saved");
  }
  if (dump_.overdue()) {
    log("hang: the stack dump took longer than " + format_duration(hang_dump::kLimit) + " and was ended");
    on_hang_("the stack dump did not finish within " + format_duration(hang_dump::kLimit));
  }
  stragglers_.tick();
  dump_.drain();
  watch_new_ranks();
  if (state_ != nullptr)
    stragglers_.look(
        state_->get(), [this](pid_t p) { return ranks_.count(p) != 0; },  // only this node's watched ranks
        dir_.checked && !dir_.problem.empty() ? "" : dir_.dir);
  on_deaths();
  check_hang();
  check_start();
  check_writes();
  // New ranks nudge the supervisor (SIGCHLD) when they take a heartbeat slot; the
  // minute is for ranks of an older libtrainctl, which do not.
  milliseconds wait(kNewRankLook);
  if (opts_.hang.timeout.count() != 0)
    wait = std::min(wait,
                    std::max(milliseconds(1000), std::chrono::duration_cast<milliseconds>(budgets_.shortest() / 10)));
  if (opts_.hang.start_timeout.count() > 0 && !all_started_) wait = std::min(wait, milliseconds(1000));
  if (check_) wait = std::min(wait, std::chrono::duration_cast<milliseconds>(check_by_ - now));
  if (dump_.running() || stragglers_.busy()) wait = std::min(wait, milliseconds(1000));
  wait = std::min(wait, culprit_.tick());
  return std::max(wait, milliseconds(0));
}

// The ranks of this node are the processes in the node state's heartbeat slots (every
// rank that uses trainctl has one); each is held by a pidfd, which turns readable the
// moment it dies, before its launcher reaps it.
void node_health::watch_new_ranks() {
  if (state_ == nullptr || !epoll_fd_ || !has_header(state_->get())) return;
  for (const auto& b : state_->get().beats) {
    const pid_t pid = beat_fields::read(b).pid;
    if (pid <= 0 || pid == self_ || ranks_.count(pid) != 0) continue;
    watched w;
    w.fd.reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
    // Opened first, checked second: a pid reused by another user's process is refused.
    if (w.fd && !live_process_of_mine(pid)) w.fd.reset();
    if (w.fd) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = static_cast<std::uint64_t>(pid);
      epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, w.fd.get(), &ev);
    }
    ranks_[pid] = std::move(w);
  }
}

void node_health::on_deaths() {
  if (!epoll_fd_) return;
  epoll_event evs[64];
  const int n = epoll_wait(epoll_fd_.get(), evs, 64, 0);
  const std::int64_t now = unix_now_ms();
  for (int i = 0; i < n; ++i) {
    const pid_t pid = static_cast<pid_t>(evs[i].data.u64);
    auto it = ranks_.find(pid);
    if (it == ranks_.end() || !it->second.fd) continue;
    // How it ended, while it is a zombie (its launcher has not reaped it yet).
    note_death(pid, now, zombie_wait_status(pid));
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, it->second.fd.get(), nullptr);
    it->second.fd.reset();
  }
}

void node_health::trainctl_ended_ranks() {
  on_deaths();  // the deaths that came before, with their own times
  culprit_.trainctl_ended(unix_now_ms());
}

void node_health::note_death(pid_t pid, std::int64_t when_ms, int wait_status) {
  auto& w = ranks_[pid];
  w.died_ms = when_ms;
  w.wait_status = wait_status;
  // Read now: a restarted rank may take the dead one's slot later.
  if (const rank_beat* b = beat_of(pid)) {
    w.rank = beat_fields::read(*b).rank;
    w.error = error_fields::read(*b);
  }
  culprit_.rank_died(pid, when_ms, wait_status);
}

const rank_beat* node_health::beat_of(pid_t pid) const {
  return state_ != nullptr ? beat_fields::of_pid(state_->get(), pid) : nullptr;
}

// A rank quiet for longer than its phase's budget is hung: training ranks after
// --hang-timeout without an agreement, a rank inside a save or a marked phase after that
// phase's budget (it is quiet since its last agreement or phase change, whichever is
// later). Its peers block in the next collective soon after, in the same phase (a save
// is decided on every rank at once; a marked phase is marked on every rank), so every
// node's supervisor finds its own ranks hung at about the same time.
void node_health::check_hang() {
  if (opts_.hang.timeout.count() == 0 || state_ == nullptr || !has_header(state_->get())) return;
  budgets_.learn(state_->get());
  const std::int64_t now = unix_now_ms();
  const rank_beat* stale = nullptr;
  std::int64_t oldest = now, over_budget = 0;
  std::string stale_phase;
  hang_budget stale_budget;
  bool fresh = false;  // some rank made progress within its budget since the hang was found
  for (const auto& b : state_->get().beats) {
    const beat_fields::beat_view v = beat_fields::read(b);
    const std::int32_t pid = v.pid, phase = v.phase;
    const std::int64_t since = clocks_of(v.beat_ms, phase == kPhaseTraining, v.phase_ms).hang_clock;
    if (pid <= 0 || since <= 0) continue;  // not started: check_start judges it
    if (phase == kPhaseWrite) continue;    // at its end, waiting for its writes: check_writes judges them
    const std::string name = phase_budgets::phase_name(state_->get(), phase);
    const hang_budget budget = budgets_.budget_of(name);
    const std::int64_t quiet = now - since;
    if (since > dump_.hung_since_ms() && quiet <= budget.budget.count()) fresh = true;
    if (quiet <= budget.budget.count() || quiet - budget.budget.count() <= over_budget) continue;
    // An exited rank its launcher has not reaped yet is no hang, nor is a pid that
    // now names another user's process.
    if (!live_process_of_mine(pid)) continue;
    over_budget = quiet - budget.budget.count();
    oldest = since;
    stale = &b;
    stale_phase = name;
    stale_budget = budget;
  }
  if (stale == nullptr) {
    // Over when the ranks make progress again; not when they are gone (end-step, an exit).
    if (dump_.hung() && !dump_.running() && fresh) {
      log("hang: the ranks make progress again");
      dump_.progress_again();
    }
    return;
  }
  if (dump_.hung() || dump_.running()) return;
  const beat_fields::beat_view sv = beat_fields::read(*stale);
  const std::string who = "rank " + std::to_string(sv.rank) + " (pid " + std::to_string(sv.pid) + ")";
  char quiet[32];
  std::snprintf(quiet, sizeof quiet, "%.1f s", static_cast<double>(now - oldest) / 1000.0);
  const std::string step = std::to_string(sv.step);
  std::string why;
  if (stale_phase.empty())
    why = who + " has not reached an agreement for " + std::string(quiet) + " (its last step " + step + ")";
  else
    why = who + " has been " + (stale_phase == "save" ? std::string("saving") : "in phase '" + stale_phase + "'") +
          " for " + quiet + ", past its budget of " + format_duration(stale_budget.budget) + " (" + stale_budget.why +
          "; its last step " + step + ")";
  dump_.set_stall_ms(now - oldest);
  start_dump(why, oldest, stale_phase.empty() ? "" : stale_phase == "save" ? "saving" : "in phase " + stale_phase);
}

// A save's write that goes on after the loop handed it off (an asynchronous save) is
// judged by the save's budget, from the save's start: a write past it is a finding, said
// once per save, and never a hang: the loop trains on meanwhile, and a rank waiting at
// its end for the write is waiting for it, not stuck. Nothing is ended for it.
void node_health::check_writes() {
  if (opts_.hang.timeout.count() == 0 || state_ == nullptr || !has_header(state_->get())) return;
  const std::int64_t now = unix_now_ms();
  for (const auto& b : state_->get().beats) {
    const beat_fields::beat_view v = beat_fields::read(b);
    const std::int32_t pid = v.pid;
    const save_fields::save_view saves = save_fields::read(b);
    if (pid <= 0 || saves.pending <= 0) continue;
    const std::int64_t step = saves.pending_step, since = saves.pending_ms;
    if (step < 0 || since <= 0 || since > now) continue;
    const hang_budget budget = budgets_.budget_of("save");
    if (now - since <= budget.budget.count() || !slow_writes_.insert({pid, step}).second) continue;
    if (!live_process_of_mine(pid)) continue;
    char took[32];
    std::snprintf(took, sizeof took, "%.1f s", static_cast<double>(now - since) / 1000.0);
    log("save: rank " + std::to_string(v.rank) + " (pid " + std::to_string(pid) + ") has been writing the " +
        "save at step " + std::to_string(step) + " for " + took + ", past the save's budget of " +
        format_duration(budget.budget) + " (" + budget.why + "): a slow or stuck write; " +
        (saves.waiting ? "the rank waits for it at its end" : "training goes on meanwhile") +
        ", nothing is ended, and the save is not committed until the write ends");
  }
}

// Before the first agreement (process group init, rendezvous, the first data load)
// there is no heartbeat to go stale: a rank process that has been running for
// --hang-start-timeout without one is hung. Looked for until every rank found has
// reached its first agreement.
void node_health::check_start() {
  if (opts_.hang.start_timeout.count() == 0 || all_started_ || dump_.hung() || dump_.running() ||
      clock::now() < next_start_scan_)
    return;
  next_start_scan_ = clock::now() + std::max(milliseconds(1000),
                                             std::chrono::duration_cast<milliseconds>(opts_.hang.start_timeout / 10));
  std::map<pid_t, rank_clocks> clocks;
  if (state_ != nullptr && has_header(state_->get()))
    for (const auto& b : state_->get().beats) {
      const beat_fields::beat_view v = beat_fields::read(b);
      clocks[v.pid] = clocks_of(v.beat_ms, v.phase == kPhaseTraining, v.phase_ms);
    }
  double uptime = 0;
  std::ifstream("/proc/uptime") >> uptime;
  const long hz = sysconf(_SC_CLK_TCK);
  bool all = true, any = false;
  for (const auto& r : find_rank_procs(self_, opts_.launchers, !opts_.batch)) {
    if (owns(r.pid) || (owned_elsewhere_ && owned_elsewhere_(r.pid)) || !live_process_of_mine(r.pid)) continue;
    any = true;
    const rank_clocks c = clocks.count(r.pid) != 0 ? clocks[r.pid] : rank_clocks{};
    if (c.agreed) continue;
    all = false;
    if (c.started) continue;  // inside a phase before its first agreement: check_hang judges it
    double age_s = uptime - static_cast<double>(r.start_time) / static_cast<double>(hz);
    if (c.start_clock > 0)  // from the end of a phase it marked before its first agreement
      age_s = std::min(age_s, static_cast<double>(unix_now_ms() - c.start_clock) / 1000.0);
    if (age_s * 1000 < static_cast<double>(opts_.hang.start_timeout.count())) continue;
    const std::string rank = proc_environ_value(r.pid, env_var::kRank);
    start_dump("rank " + (rank.empty() ? "?" : rank) + " (pid " + std::to_string(r.pid) +
                   ") has not reached its first agreement " +
                   format_duration(milliseconds(std::int64_t(age_s * 1000))) + " after it started",
               unix_now_ms() - static_cast<std::int64_t>(age_s * 1000), "");
    dump_.set_stall_ms(static_cast<std::int64_t>(age_s * 1000));
    return;
  }
  all_started_ = any && all;
}

void node_health::start_dump(const std::string& why, std::int64_t stall_began_ms, const std::string& doing) {
  log("hang: " + why + "; taking every rank's stacks");
  hang_dump_request r;
  r.why = why;
  r.doing = doing;
  r.stall_began_ms = stall_began_ms;
  r.stall_ms = dump_.stall_ms();
  r.dir = dir_;
  r.leaf = "stacks-" + (opts_.job_id.empty() ? "pid" + std::to_string(self_) : opts_.job_id);
  r.run = run_key(opts_.job_id, self_);
  r.state_dir = state_ != nullptr ? state_->path().substr(0, state_->path().rfind('/')) : state_dir();
  r.job = opts_.job_id;
  r.root = self_;
  r.launchers = opts_.launchers;
  r.command_is_rank = !opts_.batch;
  // The supervisor's helpers are no ranks: the hook, the query, node health's own.
  const auto elsewhere = owned_elsewhere_;
  r.excluded = [this, elsewhere](pid_t p) {
    return owns(p) || (elsewhere && elsewhere(p));  // `this` is the child's copy
  };
  std::vector<int> ignore = opts_.notices;
  ignore.push_back(opts_.graceful_signal);
  const std::string error = dump_.start(r, ignore);
  if (!error.empty()) {
    log("hang: cannot take the stacks: " + error);
    on_hang_("stacks not taken");
  }
}

std::string node_health::peer_death() const { return culprit_.peer_death(); }

// The culprit rule (crash_culprit.hpp). Runs once, after the command ended.
std::optional<node_health::program_death> node_health::command_ended(int status) {
  on_deaths();
  crash_culprit::end_facts f;
  f.status = status;
  f.command = command_;
  f.command_is_launcher = command_is_launcher_;
  f.hung = dump_.hung();
  f.state_damage = [this] {
    return !state_damage_.empty() ? state_damage_ : state_ != nullptr ? state_->damage() : "";
  };
  // A rank that crashed never cleared its beat slot: its pid and rank are still there.
  f.rank_of = [this](pid_t pid) {
    const rank_beat* b = beat_of(pid);
    return b != nullptr ? static_cast<int>(beat_fields::read(*b).rank) : -1;
  };
  culprit_.command_ended(f);
  if (culprit_.program_death_status() < 0) return std::nullopt;
  program_death d;
  d.status = culprit_.program_death_status();
  d.died_ms = culprit_.first_death_ms();
  const pid_t first = culprit_.first_dead();
  const auto w = ranks_.find(first);
  d.oom = culprit_.first_death_oom();
  if (w != ranks_.end() && (w->second.rank >= 0 || !w->second.error.empty())) {
    d.rank = w->second.rank;
    d.error = w->second.error;
  } else if (const rank_beat* b = beat_of(first)) {  // the command itself was the rank
    d.rank = beat_fields::read(*b).rank;
    d.error = error_fields::read(*b);
  }
  if (!d.error.empty()) {
    const int st = d.status;
    log("crash: " +
        (d.rank >= 0 ? "rank " + std::to_string(d.rank) + " (pid " + std::to_string(first) + ")"
                     : "pid " + std::to_string(first)) +
        " was the first rank to end on this node, with " +
        (WIFSIGNALED(st) ? "SIG" + signal_name(WTERMSIG(st)) : "exit status " + std::to_string(WEXITSTATUS(st))) +
        ": `" + d.error + "`");
  }
  // The step the rank that died first was at (its own last check()); where its slot is
  // not known, the furthest any rank of this node got.
  const rank_beat* own = beat_of(first);
  if (own != nullptr) {  // beat_of: only a slot with an agreement
    d.step = beat_fields::read(*own).step;
  } else if (state_ != nullptr && has_header(state_->get())) {
    for (const rank_beat& b : state_->get().beats)
      if (const beat_fields::beat_view v = beat_fields::read(b); v.beat_ms > 0) d.step = std::max(d.step, v.step);
  }
  return d;
}

}  // namespace trainctl
