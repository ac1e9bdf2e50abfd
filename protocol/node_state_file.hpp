// The file that maps the node state (node_state.hpp): opened and checked as trusted
// input, shared by the node's processes, its publisher role elected through it, its
// damage told in one line. state_dir.hpp says where these files live.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "node_state.hpp"
#include "owned_fd.hpp"

namespace trainctl {

// A mapping of the node state file. Move-only; unmaps and closes on destruction.
//
// The file lives in a directory only its user can add names to (owned by the user, not
// a symlink, not writable by group or others; checked on the open descriptor at every
// open), and every name in it is opened relative to that descriptor with O_NOFOLLOW:
// another user on the node can neither plant a state or lock file nor swap the
// directory. Every refusal is a runtime_error whose text is one line naming the path,
// its owner and what to do.
class node_state_file {
 public:
  // Opens or creates `path` (mode 0600); creates its directory (0700) when missing.
  explicit node_state_file(const std::string& path);
  ~node_state_file();
  node_state_file(const node_state_file&) = delete;
  node_state_file& operator=(const node_state_file&) = delete;

  node_state& get() const { return *state_; }
  const std::string& path() const { return path_; }

  // Takes the publisher role without blocking; true when this object now publishes.
  // The first holder is elected by the publisher lock (a flock: it goes with a dead
  // holder); besides, a role whose holder is gone or whose heartbeat is older than
  // `stale_ms` (> 0) is taken over, and *taken_from then names the old holder's pid.
  // When the lock file itself cannot be used (not merely held by another process),
  // *problem gets one line that says why, naming the path and its owner.
  bool try_become_publisher(std::string* problem = nullptr, std::int64_t stale_ms = 0, int* taken_from = nullptr);
  // True while this object holds the role: false once another process took it over.
  bool is_publisher() const;
  // Gives the role and the lock up (the next try_become_publisher elsewhere succeeds).
  void release_publisher();

  // Whether the file is still the state this object mapped: the same size, magic and
  // version, no unknown flag bits, and no fault on its pages (a truncated file reads as
  // zeros here instead of killing the process with SIGBUS; see guard_mapping). "" when
  // intact, else one line naming the file and what is wrong.
  std::string damage() const;

  // The open file descriptor (for TRAINCTL_STATE_FD: see adopted()).
  int fd() const { return fd_.get(); }
  // Whether the file's name is gone while it is open (st_nlink 0): systemd-logind's
  // RemoveIPC=yes removes a user's /dev/shm files when their last login session on the
  // node ends. The processes that have it open keep sharing it.
  bool removed() const;
  // Whether this object opened its supervisor's copy of a removed state: when `path` is
  // missing and is the supervisor's (TRAINCTL_STATE), the file the supervisor
  // (TRAINCTL_SUPERVISOR_PID) holds open as TRAINCTL_STATE_FD is opened through /proc,
  // if it is this user's removed node state, instead of making a new one that nobody
  // would publish (a worker torchrun restarted missed both switches).
  bool adopted() const { return adopted_; }

  // Finds the slot holding (kind, path) or claims a free one; -1 when all are taken.
  int register_switch(switch_kind kind, const std::string& name, const std::string& path);

  // Removes the state and lock files when no other process has the state open.
  void unlink_if_last();

 private:
  void open_file();
  std::string path_, name_;
  owned_fd dir_fd_;
  owned_fd fd_;
  owned_fd lock_fd_;
  std::uint64_t my_id_ = 0;
  int guard_ = -1;  // slot in the SIGBUS guard
  bool adopted_ = false;
  owned_fd open_supervisors_copy() const;
  node_state* state_ = nullptr;
};

// A copy of the node state at `path` for a reader that must leave it as it is (trainctl
// status): read once, no lock taken (the last rank's unlink_if_last is not held up),
// nothing created. Null with *why (one line) when it is not a node state of this user.
// Each field is read whole; fields may come from moments a few microseconds apart.
std::unique_ptr<node_state> read_node_state(const std::string& path, std::string* why);

}  // namespace trainctl
