#include "node_role.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include "node_state_file.hpp"
#include "publisher_fields.hpp"

namespace trainctl {

node_role::node_role(node_state_file* file, node_state& state, publisher_options opts)
    : file_(file), state_(state), opts_(opts) {}

node_role::~node_role() = default;

node_role::turn node_role::look() {
  turn t;
  if (pub_ && file_ != nullptr && !file_->is_publisher()) {
    pub_.reset();  // another process took the role while this one was stopped or stuck
    t.lost = true;
  }
  if (pub_) return t;
  std::string problem;
  if (file_ == nullptr || file_->try_become_publisher(&problem, publisher_stale_after_ms(state_), &t.taken_from)) {
    pub_ = std::make_unique<publisher>(state_, opts_);
    pub_->refresh();
    t.took = true;
  } else if (!problem.empty() && problem != reported_problem_) {
    t.problem = problem;
    reported_problem_ = problem;
  }
  return t;
}

void node_role::give_up() {
  pub_.reset();
  if (file_ != nullptr) file_->release_publisher();
}

pid_t node_role::holder() const {
  if (pub_ || file_ == nullptr) return 0;
  return publisher_fields::holder_pid(publisher_fields::holder(state_));
}

// A holder that stopped is taken over at once: a live one has beaten again by then.
// Already stale and still not taken, the lock is unusable: the caller's poll goes on.
std::chrono::milliseconds node_role::until_stale(std::int64_t now_ms, std::chrono::milliseconds cap) const {
  if (pub_ || file_ == nullptr) return cap;
  const std::int64_t stale_at = publisher_fields::beat_ms(state_) + publisher_stale_after_ms(state_) + 50;
  if (stale_at <= now_ms) return cap;
  return std::min(cap, std::chrono::milliseconds(std::max<std::int64_t>(100, stale_at - now_ms)));
}

int node_role::rewatch_holder() {
  const pid_t h = holder();
  bool dead = false;
  if (holder_fd_) {
    pollfd p{holder_fd_.get(), POLLIN, 0};
    dead = poll(&p, 1, 0) == 1;
  }
  if (h == holder_pid_ && !dead) return -1;
  holder_fd_.reset();
  holder_pid_ = h;
  if (h <= 0 || dead) return -1;
  holder_fd_.reset(static_cast<int>(syscall(SYS_pidfd_open, h, 0)));
  return holder_fd_.get();
}

}  // namespace trainctl
