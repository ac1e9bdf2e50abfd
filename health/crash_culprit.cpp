#include "crash_culprit.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <thread>
#include <vector>

#include "bad_node_contrast.hpp"
#include "bad_nodes.hpp"
#include "crash_order.hpp"
#include "dir_entries.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "gpu_memory.hpp"
#include "hostlist.hpp"
#include "node_names.hpp"
#include "node_state.hpp"
#include "owned_fd.hpp"
#include "parse.hpp"
#include "ranks.hpp"
#include "stack_dump.hpp"

namespace trainctl {
namespace {

using std::chrono::milliseconds;

// How long a node that may be the crash culprit waits for the other nodes' first deaths,
// and until when after its death for a sign of life from each node without one.
constexpr milliseconds kEvidenceWait{3000};
constexpr milliseconds kSignOfLifeWait = kLeaseInterval + milliseconds(2000);

// TRAINCTL_CLOCK_SKEW_MS when set (ms), else -1: the allowance is measured.
std::int64_t clock_skew_override_ms() {
  const std::string v = env_text(env_var::kTrainctlClockSkewMs);
  char* end = nullptr;
  const long long n = std::strtoll(v.c_str(), &end, 10);
  return !v.empty() && *end == '\0' && n >= 0 ? n : -1;
}

std::string how_it_ended(int wait_status) {
  if (wait_status < 0) return "an unknown cause";
  if (WIFSIGNALED(wait_status)) return "SIG" + signal_name(WTERMSIG(wait_status));
  return "exit status " + std::to_string(WEXITSTATUS(wait_status));
}

std::string to_ms_text(std::int64_t ms) { return std::to_string(ms) + " ms"; }

// How many nodes the job step runs on (SLURM_STEP_NUM_NODES, else SLURM_JOB_NUM_NODES,
// else 1): only a step on several nodes compares first deaths.
int step_nodes() {
  for (const char* name : {"SLURM_STEP_NUM_NODES", "SLURM_JOB_NUM_NODES"}) {
    const int n = std::atoi(env_text(name).c_str());
    if (n > 0) return n;
  }
  return 1;
}

// The step's nodes, as SLURM lists them; empty when the list does not name `count` nodes.
std::vector<std::string> step_node_list(int count) {
  const std::string list =
      env_text(env_text(env_var::kSlurmStepNodelist).empty() ? "SLURM_JOB_NODELIST" : "SLURM_STEP_NODELIST");
  std::vector<std::string> nodes = expand_hostlist(list);
  for (const auto& n : nodes)
    if (!valid_node_name(n)) return {};
  return static_cast<int>(nodes.size()) == count ? nodes : std::vector<std::string>{};
}

// Every other node's line in the crash evidence directory (open as `fd`): regular files
// of this user named as nodes, read without following links or blocking.
std::vector<node_death> other_deaths(int fd, const std::string& me) {
  std::vector<node_death> out;
  for (const std::string& name : dir_entry_names(fd)) {
    if (name == me || !valid_node_name(name)) continue;
    const owned_fd f(openat(fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat fs {};
    char buf[128] = {};
    if (!f) continue;
    const bool ours = fstat(f.get(), &fs) == 0 && S_ISREG(fs.st_mode) && fs.st_uid == getuid();
    const ssize_t n = ours ? read(f.get(), buf, sizeof buf - 1) : -1;
    long long t = 0;
    int status = -1;
    if (n <= 0 || std::sscanf(buf, "first_ms=%lld status=%d", &t, &status) < 1) continue;
    out.push_back({name, t, status});
  }
  return out;
}

// Marks this node's judgement done in the crash evidence directory (open as `fd`) and,
// when every node of the step has marked it and none was blamed, removes the directory:
// a step that ended without a finding leaves nothing in the log directory. A node whose
// supervisor never got here (killed) leaves it, and a blamed node's evidence is kept for
// the admin who reads the bad-node memory. Runs in a child (the log directory may stall).
std::string close_evidence(int fd, const std::string& dir, const std::string& me, int nodes, bool blamed) {
  std::string why = append_in_dir(fd, me + ".done", "\n", 0600);
  if (blamed && why.empty()) why = append_in_dir(fd, "blamed", me + "\n", 0600);
  struct stat st {};
  int done = 0;
  bool keep = fstatat(fd, "blamed", &st, AT_SYMLINK_NOFOLLOW) == 0;
  const std::vector<std::string> names = dir_entry_names(fd);
  for (const std::string& name : names)
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".done") == 0) ++done;
  if (!why.empty() || keep || done < nodes) return why;
  for (const auto& name : names) {
    // Only this user's regular files: anything else (planted there) stays, and so does
    // the directory then.
    if (fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_uid == getuid())
      unlinkat(fd, name.c_str(), 0);
  }
  rmdir(dir.c_str());
  return "";
}

// The step's crash evidence directory, `leaf` in the user's evidence root of `log_dir`
// (see evidence_root), made when missing and opened: none and *why when it cannot be.
// Runs in a child. *dir: its path.
owned_fd open_crash_dir(const std::string& log_dir, const std::string& leaf, std::string* dir, std::string* why) {
  const std::string root = evidence_root(log_dir, false, why);
  if (root.empty()) return owned_fd();
  *dir = root + "/" + leaf;
  return open_stacks_dir(*dir, false, why);
}

}  // namespace

std::string run_key(const std::string& job_id, pid_t self) {
  if (job_id.empty()) return "pid" + std::to_string(self);
  const std::string restart = env_text(env_var::kSlurmRestartCount);
  return job_id + "." + (restart.empty() ? "0" : restart);
}

crash_culprit::crash_culprit(const supervisor_options& o, const log_dir_status& dir, const log_fn& log)
    : opts_(o), dir_(dir), log_(log), presence_(o, log), oom_(this_oom_watch(unix_now_ms())) {}

void crash_culprit::rank_died(pid_t pid, std::int64_t when_ms, int wait_status) {
  if (first_dead_ != 0) return;
  first_dead_ = pid;
  first_death_ms_ = when_ms;
  first_death_status_ = wait_status;
  note_oom();
  publish_first_death();
}

void crash_culprit::note_oom() {
  const int st = first_death_status_;
  first_death_oom_ = st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? oom_.oom_killed(first_death_ms_) : -1;
}

std::chrono::milliseconds crash_culprit::tick() {
  oom_.sample(unix_now_ms());
  if (opts_.job_id.empty() || opts_.batch || ending_ || step_nodes() < 2 || !dir_.checked || !dir_.problem.empty())
    return kLeaseInterval;
  return presence_.tick(dir_.dir, evidence_leaf());
}

bool crash_culprit::reaped(pid_t pid, int status) {
  if (presence_.reaped(pid, status)) return true;
  if (!evidence_ || pid != evidence_->pid()) return false;
  const child_result r = evidence_->finish(status);
  evidence_.reset();
  if (!r.output.empty()) log_(r.output.substr(0, r.output.find('\n')));
  return true;
}

// The other nodes compare their first deaths with this one: written at once (in a
// child, the log directory may be slow), not when the launcher gets round to exiting.
void crash_culprit::publish_first_death() {
  if (opts_.job_id.empty() || opts_.batch || evidence_ || ending_ || step_nodes() < 2 ||
      (dir_.checked && !dir_.problem.empty()))
    return;
  const std::string logs = dir_.dir, leaf = evidence_leaf(), me = node_name();
  const std::string line =
      "first_ms=" + std::to_string(first_death_ms_) + " status=" + std::to_string(first_death_status_) + "\n";
  child_spec spec;
  spec.ignore_signals = opts_.notices;
  spec.ignore_signals.push_back(opts_.graceful_signal);
  spec.work = [logs, leaf, me, line]() -> std::string {
    std::string why, dir;
    const owned_fd fd = valid_node_name(me) ? open_crash_dir(logs, leaf, &dir, &why) : owned_fd();
    if (!fd) return "crash evidence not written: " + (why.empty() ? "'" + me + "' is not a node name" : why) + "\n";
    struct stat st {};
    if (fstatat(fd.get(), me.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) why = append_in_dir(fd.get(), me, line, 0600);
    return why.empty() ? "" : "crash evidence not written: " + why + "\n";
  };
  evidence_ = std::make_unique<started_child>(spec);
}

// A truncated node state faults in every process that maps it: a rank that died of
// that SIGBUS (its guard displaced, or a program of its own) tells nothing of the node
// or the program. Says so once.
bool crash_culprit::sigbus_of_damaged_state(const end_facts& f) {
  if (first_death_status_ < 0 || !WIFSIGNALED(first_death_status_) || WTERMSIG(first_death_status_) != SIGBUS)
    return false;
  const std::string damage = f.state_damage ? f.state_damage() : "";
  if (damage.empty()) return false;
  log_("crash: not judged: the first rank death on this node was SIGBUS, and the " + damage +
       ": trainctl's own state, no fault of the node");
  return true;
}

// One per job step and run: the steps of one job (and its requeued runs) crash apart.
std::string crash_culprit::evidence_leaf() const {
  const std::string step = env_text(env_var::kSlurmStepId);
  return "crash-" + run_key(opts_.job_id, self_) + "." + (step.empty() ? "batch" : step);
}

// The evidence writer started at this node's first death, given a moment to finish: it
// is this node's line for the others (killing it could leave half a line), and a helper
// still running at the end would be counted as a process the command left behind.
void crash_culprit::settle_evidence() {
  if (!evidence_) return;
  int status = 0;
  const pid_t pid = evidence_->pid();
  if (evidence_->wait_exit(milliseconds(2000), &status)) {
    reaped(pid, status);
    return;
  }
  evidence_->abandon();
  evidence_.reset();
}

// srun sends a step's other tasks TERM within seconds of a failed task's end, which comes
// at most about half a minute after that task's first rank death (torchrun gives a node's
// other workers 30 s to stop). A TERM later than this is something else, a time limit, a
// preemption or scancel, whatever died before it: CI saw a test's scancel 294 s after a
// rank's failed start called "srun --kill-on-bad-exit". Named that, a preemption's ranks
// save with the wrong reason, and the report counts the wrong loss.
constexpr std::int64_t kPeerTermWindowMs = 120000;

std::string crash_culprit::peer_death() const {
  if (opts_.job_id.empty() || opts_.batch || step_nodes() < 2 || (dir_.checked && !dir_.problem.empty())) return "";
  const std::string logs = dir_.dir, leaf = evidence_leaf(), me = node_name();
  child_spec spec;
  spec.deadline = milliseconds(1000);
  spec.ignore_signals = opts_.notices;
  spec.work = [logs, leaf, me]() -> std::string {
    std::string why;
    const std::string root = evidence_root(logs, false, &why);
    if (root.empty()) return "";
    // Not created here: a step nobody's rank has ended in has no evidence yet.
    const std::string dir = root + "/" + leaf;
    const owned_fd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (!fd || fstat(fd.get(), &st) != 0 || st.st_uid != getuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) return "";
    const std::int64_t now = unix_now_ms();
    std::int64_t first = -1;
    int status = -1;
    std::string who;
    // A peer that finished (exit 0) is no failure; an unknown end (-1) may be one. A
    // death long before the TERM did not bring it.
    auto may_have_brought_the_term = [now](const node_death& n) {
      return n.status != 0 && n.first_ms <= now && now - n.first_ms <= kPeerTermWindowMs;
    };
    for (const node_death& n : other_deaths(fd.get(), me)) {
      if (!may_have_brought_the_term(n) || (first >= 0 && n.first_ms >= first)) continue;  // the earliest
      first = n.first_ms;
      status = n.status;
      who = n.node;
    }
    if (first < 0) return "";
    return "a rank on " + who + " ended with " + how_it_ended(status) + " " + to_ms_text(now - first) + " before";
  };
  const child_result r = run_child(spec);
  return r.ok() ? r.output : "";
}

// The culprit rule (see the header). Runs once, after the command ended; on a step of
// several nodes it also says this node is done with the step's crash evidence, which the
// last node removes when nobody was blamed.
void crash_culprit::command_ended(const end_facts& f) {
  const int status = f.status;
  ending_ = true;  // from here on this node's own line is written below, not by a child
  presence_.stop();
  settle_evidence();
  const bool failed = (WIFEXITED(status) && WEXITSTATUS(status) != 0) || WIFSIGNALED(status);
  const bool caused = caused_since_ms_ != 0 && (first_dead_ == 0 || first_death_ms_ >= caused_since_ms_);
  if (opts_.batch || opts_.job_id.empty()) {
    // A batch script's ranks, when they run in it (no step): their deaths only, not the script's status.
    if (failed && !caused && !f.hung && first_dead_ != 0 && !sigbus_of_damaged_state(f))
      program_death_status_ = first_death_status_;
    return;
  }
  const int nodes = step_nodes();
  bool judge = failed;
  if (judge && (caused || f.hung)) {
    log_("crash: not judged: trainctl itself told the ranks to stop or ended them");
    judge = false;
  }
  // The command itself is the rank (srun python train.py): its own status is exact.
  if (judge && first_dead_ == 0 && !f.command_is_launcher) rank_died(f.command, unix_now_ms(), status);
  if (judge && first_dead_ == f.command && first_death_status_ != status) {
    first_death_status_ = status;
    note_oom();
  }
  if (judge && first_dead_ == 0) {
    log_("crash: no rank death was seen on this node (its ranks do not use trainctl): no node is blamed");
    judge = false;
  }
  if (judge && sigbus_of_damaged_state(f)) judge = false;
  if (judge) program_death_status_ = first_death_status_;
  if (!dir_.problem.empty()) {
    if (judge) log_("crash: not judged: " + dir_.problem);
    return;
  }
  if (!judge && nodes < 2) return;
  const std::string logs = dir_.dir, leaf = evidence_leaf(), me = node_name();
  death first;
  first.ms = first_death_ms_;
  first.status = first_death_status_;
  first.pid = first_dead_;
  first.rank = f.rank_of && first.pid > 0 ? f.rank_of(first.pid) : -1;
  const std::int64_t skew_override = clock_skew_override_ms();
  const std::string job = opts_.job_id;
  child_spec spec;
  spec.deadline = kEvidenceWait + kSignOfLifeWait + milliseconds(4000);
  spec.ignore_signals = opts_.notices;
  spec.work = [=]() -> std::string {
    std::ostringstream out;
    std::string why, dir;
    const owned_fd dir_fd = valid_node_name(me) ? open_crash_dir(logs, leaf, &dir, &why) : owned_fd();
    const int fd = dir_fd.get();
    if (!dir_fd) {
      if (judge) out << "crash: not judged: " << (why.empty() ? "'" + me + "' is not a node name" : why) << "\n";
      return out.str();
    }
    bool blamed = false;
    if (judge) blamed = judge_first_death(fd, me, first, skew_override, job, nodes < 2, out);
    why = nodes >= 2 ? close_evidence(fd, dir, me, nodes, blamed) : "";
    if (nodes < 2 && !blamed) {  // one node: nothing to compare with, nothing kept
      unlinkat(fd, me.c_str(), 0);
      rmdir(dir.c_str());
    }
    if (!why.empty()) out << "crash evidence: " << why << "\n";
    return out.str();
  };
  const child_result r = run_child(spec);
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);) log_(line);
  if (!r.finished) log_(std::string(judge ? "crash: not judged: " : "crash evidence: ") + r.error);
}

// Whether this node's first rank death makes it the culprit (see the header); writes
// this node's line when the death was not published yet, and what it found to `out`.
// Runs in the judging child.
bool crash_culprit::judge_first_death(int fd, const std::string& me, const death& first, std::int64_t skew_override,
                                      const std::string& job, bool alone, std::ostringstream& out) {
  const std::int64_t mine = first.ms;
  const int st = first.status;
  const pid_t pid = first.pid;
  struct stat own {};
  std::string err;  // written at the death already, unless the command itself was the rank
  if (fstatat(fd, me.c_str(), &own, AT_SYMLINK_NOFOLLOW) != 0)
    err = append_in_dir(fd, me, "first_ms=" + std::to_string(mine) + " status=" + std::to_string(st) + "\n", 0600);
  const bool fault = st >= 0 && WIFSIGNALED(st) && is_fault_signal(WTERMSIG(st));
  if (!fault) {
    out << "crash: the first rank to end on this node (pid " << pid << ") ended with " << how_it_ended(st)
        << (st < 0 ? " (its launcher reaped it before trainctl could read how)" : ", not a fault of the node")
        << ": no node is blamed\n";
    return false;
  }
  order_facts facts;
  facts.me = me;
  facts.mine_ms = mine;
  facts.skew_override_ms = skew_override;
  facts.node_count = alone ? 1 : step_nodes();
  facts.nodes = step_node_list(facts.node_count);
  // The other nodes' first deaths, and from each node with none a sign of life after this
  // death (renewed every kLeaseInterval): waited for a few seconds.
  if (!alone) std::this_thread::sleep_for(kEvidenceWait);
  order_verdict v;
  while (true) {
    facts.mine_fs_ms = modified_ms(fd, me);
    facts.deaths = other_deaths(fd, me);
    facts.presences = read_presences(fd);
    v = judge_order(facts);
    if (alone || silent_nodes(facts).empty() || unix_now_ms() - mine >= kSignOfLifeWait.count()) break;
    std::this_thread::sleep_for(milliseconds(250));
  }
  if (!v.first) {
    out << "crash: rank pid " << pid << " on this node died by " << how_it_ended(st) << ", but " << v.why_not
        << ": no node is blamed\n";
    return false;
  }
  const std::string lead = v.lead;
  // The array names the program: its tasks' crashes are one program's.
  const std::string array = env_text(env_var::kSlurmArrayJobId), path = bad_nodes_path();
  bad_node b;
  b.when = mine / 1000;
  b.host = me;
  b.job = job;
  b.gpus = gpu_uuids();
  b.reason = crash_finding_reason(how_it_ended(st), first.rank, array, lead);
  std::string follows;
  if (!alone) follows = when_the_crash_follows_the_rank(path, me, first, how_it_ended(st), array, out);
  if (!follows.empty()) {
    b.reason = follows;
    alone = true;      // remembered as a suspicion: no node is to blame
  } else if (alone) {  // nothing to compare with: the program's fault as likely as the node's
    // Its tasks crashing on one node (SLURM's pick on an idle cluster) are no evidence
    // against the node.
    b.reason = std::string(kSuspectedCrash) + " (" + how_it_ended(st) + " in a rank of a one-node job" +
               (array.empty() ? "" : std::string(kOfArray) + array) +
               "; no node is kept off for a crash with nothing to compare with)";
  }
  const std::string e2 = record_bad_node(path, b);
  const std::string as = alone ? " as a suspect (" : " as a bad node (";
  out << (e2.empty() ? "remembered " + me + as + b.reason + ") in " + path
                     : "could not remember " + me + as.substr(0, as.size() - 2) + ": " + e2)
      << "\n";
  // A suspicion of a program that ran cleanly elsewhere: with another such program's,
  // the node is convicted by contrast.
  if (alone && e2.empty() && follows.empty()) {
    const std::string line = convict_by_contrast(path, me, mine / 1000, bad_node_expiry());
    if (!line.empty()) out << line << "\n";
  }
  if (!err.empty()) out << "crash: " << err << "\n";
  return e2.empty();
}

// A rank dying first on one node, then (another task of the array) first on another:
// what fails is that rank's work, wherever it runs, so neither node is to blame.
std::string crash_culprit::when_the_crash_follows_the_rank(const std::string& path, const std::string& me,
                                                           const death& first, const std::string& how,
                                                           const std::string& array, std::ostringstream& out) {
  if (first.rank < 0 || array.empty() || path.empty()) return "";
  std::size_t removed = 0;
  std::vector<bad_node> forgiven;
  const std::string why = forget_findings(
      path, [&](const bad_node& b) { return same_rank_died_first_elsewhere(b, me, first.rank, array); }, &removed,
      &forgiven);
  if (!why.empty()) out << "crash: could not read the earlier findings of array " << array << ": " << why << "\n";
  if (forgiven.empty()) return "";
  std::set<std::string> host_set, job_set;
  for (const bad_node& b : forgiven) {
    host_set.insert(b.host);
    job_set.insert(b.job);
  }
  const auto joined = [](const std::set<std::string>& items) {
    std::string text;
    for (const std::string& i : items) text += (text.empty() ? "" : ", ") + i;
    return text;
  };
  const std::string hosts = joined(host_set);
  out << "forgave " << hosts << ": rank " << first.rank << " of array " << array << " died first there (job "
      << joined(job_set) << ") and on " << me << " now: the crash follows the rank to whichever node it runs on, "
      << "so it is the program's, not a node's\n";
  return std::string(kSuspectedCrash) + " (" + how + " in rank " + std::to_string(first.rank) + kOfArray + array +
         ", which died first on " + hosts + " before; " + kFollowsTheRank;
}

}  // namespace trainctl
