#include <signal.h>

#include <algorithm>
#include <cstdlib>

#include "env.hpp"
#include "env_names.hpp"
#include "notice_fields.hpp"
#include "once_markers.hpp"
#include "parse.hpp"
#include "ranks.hpp"
#include "task_supervisor.hpp"

namespace trainctl {
namespace {

using std::chrono::milliseconds;

// How long a notice signal waits for the controller's answer (is this a preemption?)
// before it is relayed as a plain signal.
constexpr milliseconds kNoticeClassifyWait{2000};
// A TERM this close to the known EndTime is the time limit, not a preemption: no query.
constexpr std::int64_t kAtEndTimeMs = 5000;

}  // namespace

void task_supervisor::handle_signal(const signalfd_siginfo& si) {
  const int sig = static_cast<int>(si.ssi_signo);
  if (sig == SIGCHLD) {  // also a rank's nudge: it took a heartbeat slot (node health looks this turn)
    reap();
    return;
  }
  if (std::find(opts_.notices.begin(), opts_.notices.end(), sig) != opts_.notices.end() ||
      sig == opts_.graceful_signal) {
    log_.line("received SIG%s (from pid %u)", signal_name(sig).c_str(), si.ssi_pid);
    if (sig == SIGTERM) {
      procs_.report_lingering(", when SIGTERM came");
      learn_cut_save();
    }
    if (notice_by_) return;  // the one before is still waiting for its answer
    if (sig == SIGTERM && !term_seen_) {
      // SLURM ends a step's other tasks with TERM when one fails (srun --kill-on-bad-exit;
      // 26.05 sends TERM before KILL): that is a peer's death, no time limit or preemption.
      const std::string peer = health_.peer_death();
      if (!peer.empty()) {
        term_seen_ = true;
        log_.line(
            "SIGTERM came when %s: a task of this step failed and SLURM ends the others (srun --kill-on-bad-exit), "
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

// A notice signal is relayed once the controller said whether it is a preemption (then
// it already went out as one), or after kNoticeClassifyWait without an answer.
void task_supervisor::resolve_notice(const char* why) {
  notice_by_.reset();
  if (!preempted_)
    fire(kFlagSignal, why);
  else
    procs_.signal_ranks(why);
}

void task_supervisor::fire(std::uint32_t flag, const char* why) {
  if (state_) {
    notice_fields::raise(state_->get(), flag);
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

void task_supervisor::run_hook(std::uint32_t flag) {
  if (flag & kFlagHang) return;  // on_hang runs the hook itself, with the summary
  const char* kind = flag & kFlagPreempted  ? "preempted"
                     : flag & kFlagDeadline ? "deadline"
                     : flag & kFlagPeer     ? "peer-failed"
                                            : "signal";
  hook_.notice(kind, dl_.deadline_ms(), dl_.end_ms(), "");
}

void task_supervisor::follow_node_flags() {
  if (!state_ || publishes()) return;
  const std::uint32_t flags = notice_fields::flags(state_->get());
  const std::uint32_t fresh = flags & ~seen_flags_ & (kFlagDeadline | kFlagPreempted);
  if (fresh == 0) return;
  seen_flags_ |= fresh;
  if (fresh & kFlagDeadline) dl_.mark_fired();  // relayed here, not again by check_deadline
  procs_.told_to_exit(fresh & kFlagPreempted ? "preempted" : "deadline");
  procs_.signal_ranks(fresh & kFlagPreempted ? "preempted (from the node's publisher)"
                                             : "deadline (from the node's publisher)");
  run_hook(fresh);
}

// Starts a read of EndTime and preemption unless one is in flight; the answer comes
// to on_job_answer when the loop reaps the query.
void task_supervisor::start_query(const char* why) {
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
  if (env_set(env_var::kTrainctlLogQueries))  // for the RPC tests
    log_.line("asked the controller for the job's EndTime (%s, through %s) at %lld ms", why, query_.how(),
              static_cast<long long>(unix_now_ms()));
}

void task_supervisor::on_job_answer(const std::optional<job_times>& jt, const std::string& error) {
  const std::string fallback = query_.take_fallback_note();
  if (!fallback.empty()) log_.line("EndTime is read through scontrol, not libslurm: %s", fallback.c_str());
  if (!jt) {
    log_.line("could not read the job's EndTime (%s): %s; keeping %s", query_why_.c_str(), error.c_str(),
              dl_.end_ms() ? format_slurm_timestamp(dl_.end_ms()).c_str() : "no deadline");
    if (notice_by_) resolve_notice("notice");
    return;
  }
  if (jt->start_ms > 0) hook_.set_run_start(jt->start_ms);
  if (jt->start_ms > 0 && metrics_ && metrics_->goodput() != nullptr) metrics_->goodput()->started(jt->start_ms);
  if (jt->preempting && !preempted_) {
    preempted_ = true;
    log_.line("the job is being preempted (EndTime now %s)", format_slurm_timestamp(jt->end_ms).c_str());
    // For the batch step's supervisor on this node, which SLURM may not signal at a
    // preemption: at its script's end it asks the controller only when told so.
    try {
      claim_once(preempted_marker(opts_.job_id));
    } catch (const std::exception& e) {
      log_.line("%s: the batch step may not requeue the job", e.what());
    }
    fire(kFlagPreempted, "preempted");
  }
  // At the job's end slurmctld stamps EndTime with the moment of the kill: that is no
  // extension, and no deadline follows from it.
  const bool running = jt->state.empty() || jt->state == "RUNNING";
  if (!running && !job_ending_) {
    job_ending_ = true;
    log_.line("the job is ending (JobState=%s)", jt->state.c_str());
  }
  if (jt->end_ms == 0 && dl_.end_ms() != 0)
    log_.line("EndTime read as unknown (%s); keeping %s", query_why_.c_str(),
              format_slurm_timestamp(dl_.end_ms()).c_str());
  if (running && jt->end_ms != 0 && dl_.take_read(unix_now_ms())) {
    if (jt->end_ms != dl_.end_ms()) {
      const bool moved = dl_.end_ms() != 0;
      if (moved)
        log_.line("EndTime moved from %s to %s (TimeLimit %lld s)", format_slurm_timestamp(dl_.end_ms()).c_str(),
                  format_slurm_timestamp(jt->end_ms).c_str(), static_cast<long long>(jt->limit_s));
      set_end_time(jt->end_ms, jt->limit_s, moved);
    }
    publish_deadline();  // the read's time too: the ranks pass the freshest read on
  }
  if (notice_by_) resolve_notice("notice");
}

void task_supervisor::expire_waits() {
  query_.drain();
  if (query_.running() && clock::now() >= query_.deadline()) {
    std::string error;
    on_job_answer(query_.expire(&error), error);
  }
  if (notice_by_ && clock::now() >= *notice_by_) {
    log_.line("no answer from the controller within %s: relaying the notice as a signal",
              format_duration(kNoticeClassifyWait).c_str());
    resolve_notice("notice");
  }
}

}  // namespace trainctl
