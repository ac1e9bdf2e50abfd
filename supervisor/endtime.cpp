#include <signal.h>

#include <algorithm>

#include "beat_fields.hpp"
#include "deadline_fields.hpp"
#include "parse.hpp"
#include "task_supervisor.hpp"

namespace trainctl {

using std::chrono::milliseconds;

namespace {
// SLURM may send SIGTERM twice in a row at a time limit (to the process group, then to
// every process of the step's cgroup): a cut save at least this much longer than any
// known is learnt and said again, not the same one twice.
constexpr std::int64_t kCutSaveNewsMs = 1000;
}  // namespace

// The deadline from a new EndTime (read by this supervisor, or by another node's and
// passed on by the ranks): logged, published, and the last read before it scheduled.
void task_supervisor::set_end_time(std::int64_t end, std::int64_t limit_s, bool moved) {
  const std::optional<deadline_move> m = dl_.set_end(end, limit_s);
  if (!m) return;
  publish_deadline();
  const std::string& why = m->graceful.why;
  const milliseconds graceful = m->graceful.graceful;
  log_.line("deadline %s (EndTime %s - graceful exit %s)", format_slurm_timestamp(m->deadline_ms).c_str(),
            format_slurm_timestamp(m->end_ms).c_str(),
            why.empty() ? format_duration(graceful).c_str() : ("auto: " + why).c_str());
  const std::string left = format_duration(std::chrono::seconds(m->left_ms / 1000));
  // Why the deadline is already past decides what the line says: only a first read is
  // the options' doing.
  if (m->past && (preempted_ || moved))
    log_.line("%s left %s to EndTime, less than the graceful exit (%s): the ranks are told to save and exit now",
              preempted_ ? "the preemption" : "the moved EndTime", left.c_str(), format_duration(graceful).c_str());
  else if (m->past)
    log_.line(
        "the graceful exit (%s) is not shorter than the time left (%s of a %s time limit): the ranks are told to "
        "save and exit now; give a shorter --graceful-exit (GRACEFUL_EXIT in the template) or a longer --time",
        format_duration(graceful).c_str(), left.c_str(),
        dl_.limit_s() > 0 ? format_duration(std::chrono::seconds(dl_.limit_s())).c_str() : "unknown");
}

// A fresher EndTime than this supervisor read, in the node state: another node's
// supervisor read it, and the ranks' agreement carried it here (libtrainctl/src/vote.cpp,
// learn_end_news). A node whose supervisor was stopped when the TimeLimit was raised
// would otherwise fire the old deadline on waking, and its ranks with it.
void task_supervisor::adopt_end_news() {
  if (!state_ || dl_.end_ms() == 0 || !tracks_endtime()) return;  // a follower: its publisher's to follow
  const auto [end, read] = deadline_fields::end_time(state_->get());
  if (read <= dl_.end_read_ms() || end == 0 || end == dl_.end_ms()) return;
  log_.line(
      "EndTime moved from %s to %s: read at %s by another node's supervisor and passed on by the ranks, before "
      "this supervisor's own read",
      format_slurm_timestamp(dl_.end_ms()).c_str(), format_slurm_timestamp(end).c_str(),
      format_slurm_timestamp(read).c_str());
  dl_.take_read(read);
  set_end_time(end, -1, true);
}

// The deadline goes into the node state as soon as it is known, so that whoever
// publishes (or a rank whose supervisor stopped) fires it on time.
void task_supervisor::publish_deadline() {
  if (!state_) return;
  // Never a staler EndTime over a fresher one the ranks brought (adopt_end_news takes
  // that one at this supervisor's next wake).
  deadline_fields::publish(state_->get(), dl_.deadline_ms(), {dl_.end_ms(), dl_.end_read_ms()});
}

void task_supervisor::check_deadline() {
  // One last read shortly before, for a TimeLimit changed since the periodic one; the
  // deadline itself never waits for an answer.
  if (tracks_endtime() && dl_.take_pre_deadline_read()) start_query("before the deadline");
  const std::optional<std::string> why = dl_.fire_if_due();
  if (!why) return;
  if (publishes()) role_->pub()->set_deadline_ms(dl_.deadline_ms());
  fire(kFlagDeadline, why->c_str());
}

std::optional<graceful_exit_value> task_supervisor::graceful_exit(std::int64_t limit_s) const {
  if (opts_.graceful_exit.count() == 0) return std::nullopt;
  if (!graceful_is_auto()) return graceful_exit_value{opts_.graceful_exit, ""};
  const auto_graceful a = auto_ ? auto_->current(limit_s) : auto_graceful_exit(0, 0);
  return graceful_exit_value{a.graceful, a.why};
}

// --graceful-exit=auto: a save longer than any known moves the deadline (earlier: the
// next save gets the time this one needed; later, when it replaces the first task's
// guess), and the node's publisher records it for the next task of the array. A
// deadline already fired stays fired.
void task_supervisor::learn_save_time() {
  if (!auto_ || !state_) return;
  const std::int64_t save_ms = beat_fields::longest_save_ms(state_->get());
  if (save_ms <= auto_->longest_ms()) return;
  std::string problem;
  auto_->saw(save_ms, publishes(), &problem);
  if (!problem.empty()) log_.line("cannot remember the save time for the next task: %s", problem.c_str());
  if (dl_.end_ms() == 0 || dl_.fired() || procs_.done()) {
    log_.line("a save took %.1f s: graceful exit %s from now on", static_cast<double>(save_ms) / 1000.0,
              dl_.graceful().why.c_str());
    return;
  }
  const std::optional<deadline_move> m = dl_.regrace();
  if (!m) return;
  publish_deadline();
  if (publishes()) role_->pub()->set_deadline_ms(m->deadline_ms);
  log_.line("a save took %.1f s: deadline now %s (EndTime %s - graceful exit auto: %s)",
            static_cast<double>(save_ms) / 1000.0, format_slurm_timestamp(m->deadline_ms).c_str(),
            format_slurm_timestamp(m->end_ms).c_str(), m->graceful.why.c_str());
}

// --graceful-exit=auto and a save cut short (SIGTERM: the time limit, a preemption's
// end, scancel): a rank that reached the exit (its beat slot says so) and still runs
// has been saving since that agreement, which no longest_save_ms records. The
// longest such time is a lower bound of this array's saves, learnt as a save of that
// length (when a second or more over any known), so the next task leaves more. A rank
// that never agreed after the exit (still starting, hung) teaches nothing.
void task_supervisor::learn_cut_save() {
  if (!auto_ || !state_ || procs_.told_ms() == 0) return;
  const node_state& ns = state_->get();
  const std::int64_t now = unix_now_ms();
  // A rank that decided the exit marked its beat slot (exiting) at that call, whose
  // beat is the last it made: it has been saving (or ending) since then.
  std::int64_t cut_ms = 0;
  for (const rank_beat& b : ns.beats) {
    const beat_fields::beat_view v = beat_fields::read(b);
    const std::int32_t pid = v.pid;
    const std::int64_t beat = v.beat_ms;
    if (pid <= 0 || !v.exiting || beat <= 0 || beat > now || kill(pid, 0) != 0) continue;
    cut_ms = std::max(cut_ms, now - beat);
  }
  if (cut_ms < auto_->longest_ms() + kCutSaveNewsMs) return;
  std::string problem;
  auto_->saw(cut_ms, publishes(), &problem);
  log_.line(
      "a save was cut short after %.1f s (the ranks were told to exit: %s; one still saved at SIGTERM): the next "
      "task of the array leaves %s",
      static_cast<double>(cut_ms) / 1000.0, procs_.told_why().c_str(), dl_.graceful().why.c_str());
  if (!problem.empty()) log_.line("cannot remember the save time for the next task: %s", problem.c_str());
}

}  // namespace trainctl
