// Which process publishes a node state (refreshes the switches, the memory flags and the
// heartbeat): one per node and job step, elected by the file's lock, taken over from a
// holder that stopped refreshing, given up when another process took it while this one
// was stopped. The supervisor and, where no supervisor runs, the library's watcher in a
// rank take their part through this one class, so that the rule cannot drift between
// them. A private state (no file: every other node state was refused) is always
// published by its one process.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "node_state.hpp"
#include "node_state_file.hpp"
#include "owned_fd.hpp"
#include "publisher.hpp"

namespace trainctl {

class node_role {
 public:
  // `file` (may be null: the private state `state`) outlives this object.
  node_role(node_state_file* file, node_state& state, publisher_options opts);
  ~node_role();
  node_role(const node_role&) = delete;
  node_role& operator=(const node_role&) = delete;

  // What one look found.
  struct turn {
    bool took = false;    // this process publishes from now on
    int taken_from = 0;   // taken over from this stopped holder (pid); 0: elected
    bool lost = false;    // another process took the role while this one was stopped
    std::string problem;  // the lock cannot be used: one line, only when it is new
  };
  // Once per turn of the caller's loop: gives up a role another process took, and takes
  // it when free or stale. The file's damage is the caller's to check first.
  turn look();

  // The publisher while this process holds the role, else null.
  publisher* pub() { return pub_.get(); }
  bool publishes() const { return pub_ != nullptr; }
  // Gives the role up (another process takes it over at once).
  void give_up();
  // While another process publishes: its pid (0: none), and how long until its
  // heartbeat would be stale, when this process should look again (at most `cap`).
  pid_t holder() const;
  std::chrono::milliseconds until_stale(std::int64_t now_ms, std::chrono::milliseconds cap) const;
  // Holds the holder by a pidfd, readable when it ends, so that a caller polling it takes
  // the role over at once instead of trying every second. Returns the pidfd to add to
  // the caller's poll set when it changed (the old one is closed, which removes it from
  // an epoll set), else -1.
  int rewatch_holder();

 private:
  node_state_file* file_;
  node_state& state_;
  publisher_options opts_;
  std::unique_ptr<publisher> pub_;
  std::string reported_problem_;
  owned_fd holder_fd_;
  pid_t holder_pid_ = 0;
};

}  // namespace trainctl
