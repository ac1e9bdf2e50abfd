#include "deadline_tracker.hpp"

#include <algorithm>
#include <cstdio>
#include <utility>

namespace trainctl {

using std::chrono::milliseconds;

// A deadline fired this late (ms) was learnt late or the supervisor was stopped: the
// reason says which.
constexpr std::int64_t kLateMs = 2000;

deadline_tracker::deadline_tracker(unix_clock now, graceful_policy graceful, query_slots slots, std::int64_t period_ms)
    : now_(std::move(now)), graceful_(std::move(graceful)), slots_(slots), period_ms_(period_ms) {}

graceful_exit_value deadline_tracker::graceful() const {
  return graceful_(std::max<std::int64_t>(0, limit_s_)).value_or(graceful_exit_value{});
}

void deadline_tracker::set_deadline(std::int64_t d) {
  deadline_ms_ = d;
  deadline_set_ms_ = now_();
  pre_read_done_ = false;
  // The last read before the deadline, for a TimeLimit changed since the periodic one:
  // in this node's own second within the cycle that ends kPreDeadlineReadMs before it.
  pre_read_ms_ = in_own_second(slots_, deadline_ms_ - kPreDeadlineReadMs - own_cycle_ms(slots_));
}

void deadline_tracker::set_given(std::int64_t deadline_ms) {
  if (deadline_ms == 0) return;
  set_deadline(deadline_ms);
  deadline_set_ms_ = 0;  // given, not learnt: a late firing is this supervisor's lateness
}

void deadline_tracker::adopt(std::int64_t deadline_ms) {
  if (deadline_ms_ != 0 || deadline_ms == 0 || fired_) return;
  set_deadline(deadline_ms);
}

bool deadline_tracker::take_read(std::int64_t read_ms) {
  if (read_ms <= end_read_ms_) return false;
  end_read_ms_ = read_ms;
  return true;
}

std::optional<deadline_move> deadline_tracker::set_end(std::int64_t end_ms, std::int64_t limit_s) {
  if (limit_s >= 0) limit_s_ = limit_s;
  end_ms_ = end_ms;
  return move_to_graceful(true);
}

std::optional<deadline_move> deadline_tracker::regrace() {
  if (end_ms_ == 0) return std::nullopt;
  return move_to_graceful(false);
}

// The deadline EndTime - graceful exit, when it differs from the known one and none
// fired. Only an EndTime read tells whether the deadline was past when learnt.
std::optional<deadline_move> deadline_tracker::move_to_graceful(bool first_learnt) {
  const std::optional<graceful_exit_value> g = graceful_(std::max<std::int64_t>(0, limit_s_));
  if (!g || fired_) return std::nullopt;
  const std::int64_t d = end_ms_ - g->graceful.count();
  if (d == deadline_ms_) return std::nullopt;
  set_deadline(d);
  const std::int64_t now = now_();
  deadline_move m;
  m.deadline_ms = d;
  m.end_ms = end_ms_;
  m.graceful = *g;
  m.past = d <= now;
  m.left_ms = std::max<std::int64_t>(0, end_ms_ - now);
  if (first_learnt) past_when_learnt_ = m.past;
  return m;
}

void deadline_tracker::schedule_first_read() { next_read_ms_ = in_own_second(slots_, now_() + 1000); }

void deadline_tracker::schedule_periodic_read() {
  next_read_ms_ = next_periodic_ms(slots_, period_ms_, now_() + period_ms_ / 2);
}

bool deadline_tracker::take_pre_deadline_read() {
  if (!armed() || pre_read_done_ || now_() < pre_read_ms_) return false;
  pre_read_done_ = true;
  return true;
}

std::optional<std::string> deadline_tracker::fire_if_due() {
  if (!armed()) return std::nullopt;
  const std::int64_t now = now_();
  if (now < deadline_ms_) return std::nullopt;
  fired_ = true;
  const std::int64_t late_ms = now - deadline_ms_;
  char why[192];
  if (past_when_learnt_) return std::string("deadline already past when EndTime was read (see the line above)");
  if (late_ms > kLateMs && deadline_set_ms_ > deadline_ms_) {
    // Learnt late, not fired late: a longer save, or a takeover from a stopped publisher.
    std::snprintf(why, sizeof why,
                  "deadline already %.0f s past when this supervisor learnt it (a longer save moved it earlier, or "
                  "it came from a stopped publisher)",
                  static_cast<double>(deadline_set_ms_ - deadline_ms_) / 1000.0);
    return std::string(why);
  }
  if (late_ms > kLateMs) {
    std::snprintf(why, sizeof why, "deadline reached %.0f s ago (this supervisor was stopped or busy)",
                  static_cast<double>(late_ms) / 1000.0);
    return std::string(why);
  }
  return std::string("deadline reached");
}

milliseconds deadline_tracker::wait(bool pre_read, milliseconds cap) const {
  if (!armed()) return cap;
  const std::int64_t now = now_();
  std::int64_t until = deadline_ms_ - now;
  if (pre_read && !pre_read_done_) until = std::min(until, pre_read_ms_ - now);
  return std::min(cap, milliseconds(until));
}

}  // namespace trainctl
