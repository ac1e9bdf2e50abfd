// When a task's ranks are told to save and exit: the job's EndTime (as last read, by this
// supervisor or passed on by the ranks from another node's) minus the graceful exit, and
// when to read EndTime again (periodically, and once shortly before the deadline, for a
// TimeLimit raised since). Pure bookkeeping with an injected clock: the supervisor asks
// the controller, logs, and writes the node state; this class decides the times.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "query_schedule.hpp"

namespace trainctl {

// The graceful exit for a job's time limit: a fixed duration, or learnt (auto), with
// why (auto only). nullopt: no graceful exit asked for, so no deadline follows EndTime.
struct graceful_exit_value {
  std::chrono::milliseconds graceful{0};
  std::string why;
};
using graceful_policy = std::function<std::optional<graceful_exit_value>(std::int64_t limit_s)>;

// A deadline that changed because EndTime or the graceful exit did.
struct deadline_move {
  std::int64_t deadline_ms = 0;
  std::int64_t end_ms = 0;
  graceful_exit_value graceful;
  bool past = false;         // already past when learnt: the ranks are told now
  std::int64_t left_ms = 0;  // from now to EndTime, at least 0
};

class deadline_tracker {
 public:
  using unix_clock = std::function<std::int64_t()>;  // wall clock, ms since the epoch
  // Reads the read that can wait falls in this node's own seconds (`slots`); periodic ones
  // come every `period_ms`.
  deadline_tracker(unix_clock now, graceful_policy graceful, query_slots slots, std::int64_t period_ms);

  std::int64_t end_ms() const { return end_ms_; }
  std::int64_t end_read_ms() const { return end_read_ms_; }
  std::int64_t limit_s() const { return limit_s_; }
  std::int64_t deadline_ms() const { return deadline_ms_; }
  bool fired() const { return fired_; }
  // A deadline known and not yet fired.
  bool armed() const { return deadline_ms_ != 0 && !fired_; }
  graceful_exit_value graceful() const;

  // A deadline given outright (--deadline), before anything else is known.
  void set_given(std::int64_t deadline_ms);
  // The deadline a stopped publisher published (a takeover): taken only when none is
  // known yet and none fired.
  void adopt(std::int64_t deadline_ms);

  // An EndTime read at read_ms: false when one as fresh is known already, else it is
  // the freshest from now on.
  bool take_read(std::int64_t read_ms);
  // A new EndTime, and the TimeLimit when the read said it (-1: unchanged). The deadline
  // that follows when it changed; a deadline that fired stays fired.
  std::optional<deadline_move> set_end(std::int64_t end_ms, std::int64_t limit_s = -1);
  // The graceful exit changed (a longer save was learnt): the deadline that follows from
  // the EndTime known, when it changed.
  std::optional<deadline_move> regrace();

  // The periodic read: when it is due, and the next one scheduled from now.
  std::int64_t next_read_ms() const { return next_read_ms_; }
  void schedule_first_read();  // a second from now: a short step costs no RPC
  void schedule_periodic_read();
  // Whether the read shortly before the deadline is due now (true once per deadline).
  bool take_pre_deadline_read();
  // The reason to fire now, once; nullopt before the deadline, or when none is armed.
  std::optional<std::string> fire_if_due();
  // A deadline another process fired (the node's publisher): not fired again here.
  void mark_fired() { fired_ = true; }
  // How long until the deadline or the read before it, whichever is first (at most `cap`).
  std::chrono::milliseconds wait(bool pre_read, std::chrono::milliseconds cap) const;

  // How close to the deadline the last read before it comes.
  static constexpr std::int64_t kPreDeadlineReadMs = 20000;

 private:
  std::optional<deadline_move> move_to_graceful(bool first_learnt);
  void set_deadline(std::int64_t d);

  unix_clock now_;
  graceful_policy graceful_;
  query_slots slots_;
  std::int64_t period_ms_;
  std::int64_t next_read_ms_ = 0;
  std::int64_t end_ms_ = 0;       // the job's EndTime as last read
  std::int64_t end_read_ms_ = 0;  // when it was read
  std::int64_t limit_s_ = -1;
  std::int64_t deadline_ms_ = 0;  // 0: none
  std::int64_t deadline_set_ms_ = 0;
  bool fired_ = false;
  bool past_when_learnt_ = false;  // the graceful exit left no time to train
  std::int64_t pre_read_ms_ = 0;
  bool pre_read_done_ = false;
};

}  // namespace trainctl
