// A node's sign of life in its step's crash evidence: NODE.alive, written by the node's
// supervisor when its step starts (with what its clock is: see clock_facts) and touched
// every kLeaseInterval while its ranks run. The node that judges a crash reads it to tell
// a node whose ranks still ran after the crash (touched since) from one that was gone
// (its supervisor killed, its node lost, its mount hung): a node with no sign of life
// gave no evidence, and then nobody is blamed (crash_order.hpp).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "run_options.hpp"
#include "subprocess.hpp"

namespace trainctl {

inline constexpr std::chrono::milliseconds kLeaseInterval{4000};

// What a node's clock is, read when its supervisor starts: the kernel it runs (nodes
// with the same boot id read one clock) and the kernel's own bound on its error, kept by
// NTP or chrony (adjtimex: maxerror, and whether it is synchronized at all).
struct clock_facts {
  std::string boot;                // /proc/sys/kernel/random/boot_id, "" unknown
  bool synced = false;             // STA_UNSYNC clear
  std::int64_t max_error_us = -1;  // -1 unknown
};
clock_facts this_clock();
std::string clock_line(const clock_facts& c);  // "boot=... synced=1 max_error_us=...\n"
clock_facts parse_clock_line(const std::string& line);

// NODE.alive as read back: its clock, and when it was last touched (its mtime, by the
// file system's clock).
struct node_presence {
  std::string node;
  clock_facts clock;
  std::int64_t touched_ms = 0;
};
// Every NODE.alive in the evidence directory `dir_fd`: this user's regular files only,
// read without following links or blocking.
std::vector<node_presence> read_presences(int dir_fd);
// Writes `me`.alive (with `c`) or touches it; "" or why not.
std::string renew_presence(int dir_fd, const std::string& me, const clock_facts& c);
// When `name` in `dir_fd` was last modified, by the file system's clock (-1: not there).
std::int64_t modified_ms(int dir_fd, const std::string& name);

// The supervisor's side: renews this node's sign of life in a child every kLeaseInterval
// (the log directory may stall) until stopped.
class step_presence {
 public:
  using log_fn = std::function<void(const std::string&)>;
  step_presence(const supervisor_options& o, log_fn log) : opts_(o), log_(std::move(log)) {}
  // `logs`: the log directory, `leaf`: the step's evidence (crash_culprit's names).
  // Returns how long until it wants the next call.
  std::chrono::milliseconds tick(const std::string& logs, const std::string& leaf);
  bool reaped(pid_t pid, int status);
  pid_t writer_pid() const { return writer_ ? writer_->pid() : 0; }
  // The command ended: no more renewals (a late one could make the directory again
  // after the last node removed it); a renewal under way is given a moment to finish.
  void stop();

 private:
  const supervisor_options& opts_;
  log_fn log_;
  clock_facts clock_ = this_clock();
  std::unique_ptr<started_child> writer_;
  std::chrono::steady_clock::time_point next_{};
  bool stopped_ = false;
  bool said_ = false;  // a failed renewal was logged (once)
};

}  // namespace trainctl
