// A rank's snapshots in host memory (ctl.snapshot), and reading them back in the node's
// supervisor once the rank died (supervisor/snapshot_writeout).
//
// Two slots per rank, files in the node state's private directory (a tmpfs: memory, never
// a shared directory): <state file>.snapshot.<rank>.<0|1>, mode 0600, opened without
// following a link. A write goes to the slot that does not hold the newest whole
// snapshot, so the one before stays whole while the next is written: first its header is
// cleared, then the bytes are written, then the header (step, world, run, attempt, where
// the saves go, the size, a sum over the header) is written last. A slot counts as whole
// only with a header whose sum matches and a size that is the file's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "owned_fd.hpp"

namespace trainctl {

// What a snapshot's header says besides its size.
struct snapshot_meta {
  std::int64_t step = -1;
  std::int64_t rank = -1;
  std::int64_t world = 0;
  std::string run;       // TRAINCTL_RUN_ID, as a commit marker names it
  std::string attempt;   // the job and requeue (save_attempt), as a commit marker names it
  std::string ckpt_dir;  // the run's checkpoint directory: where the supervisor writes it out
};

// The header's room; the bytes follow it.
constexpr std::size_t kSnapshotHeaderBytes = 4096;

// One rank's two slots, held open by the rank that writes them.
class snapshot_writer {
 public:
  snapshot_writer(std::string state_path, std::int64_t rank);
  // Writes `n` bytes as this rank's snapshot `m` (m.rank is the writer's). Throws
  // std::system_error with one line when the memory runs out (ENOSPC) or the slot cannot
  // be written (the slot holds nothing whole then; the other keeps the snapshot before),
  // std::invalid_argument for a header that does not fit.
  void write(const snapshot_meta& m, const void* data, std::size_t n);
  // The slot the next write goes to (0 or 1).
  int next_slot() const { return next_; }

 private:
  int open_slot(int slot);

  std::string state_path_;
  std::int64_t rank_;
  owned_fd fds_[2];
  int next_ = 0;
};

// A whole snapshot found in a slot.
struct snapshot_slot {
  snapshot_meta meta;
  std::string path;         // the slot's file
  std::uint64_t bytes = 0;  // the snapshot's size (after the header)
};

// The name of rank `rank`'s slot `slot` beside the node state `state_path`.
std::string snapshot_slot_path(const std::string& state_path, std::int64_t rank, int slot);

// Every whole snapshot of every rank beside `state_path`, files of this user's only;
// slots being written or cut are left out.
std::vector<snapshot_slot> whole_snapshots(const std::string& state_path);

// The header's text for `m` and `bytes`, and back (nullopt-like: step -1 when it is not
// a whole header); for the unit tests and whole_snapshots.
std::string format_snapshot_header(const snapshot_meta& m, std::uint64_t bytes);
bool parse_snapshot_header(const std::string& text, snapshot_meta* m, std::uint64_t* bytes);

// Removes the slots beside `state_path` (every rank's); how many it removed.
int remove_snapshots(const std::string& state_path) noexcept;

}  // namespace trainctl
