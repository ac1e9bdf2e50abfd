// Which checkpoints every rank committed, and the newest of them to resume from.
//
// A rank commits its part of a checkpoint (ctl.saved(step, path)) after its files are in
// place: a small marker per rank, written whole (a temporary name, fsync, rename), inside
// the checkpoint when it is a directory (PATH/.trainctl-committed.RANK) or beside it when
// it is a file (DIR/.NAME.trainctl-committed.RANK). Each marker names the step, the rank
// and the world size, so a reader knows which ranks must have committed.
//
// The checkpoint directory is often one a team shares: a checkpoint or a marker counts
// only when it is this user's, reached through no link (O_NOFOLLOW at each name), a
// directory or a regular file as it claims, and small; nothing there is opened so that it
// can block. A checkpoint name is written once (a step in its name, as HF's checkpoint-N
// and Lightning's step=N are): a name reused for every save keeps the last save's markers
// while the next one overwrites the files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace trainctl {

struct commit_marker {
  std::int64_t step = -1;
  std::int64_t rank = -1;
  std::int64_t world = 0;
  std::string run;  // TRAINCTL_RUN_ID of the run that saved ("" outside SLURM)
};

// One line for `m`, and back: nullopt for anything but what format_commit_marker wrote.
std::string format_commit_marker(const commit_marker& m);
std::optional<commit_marker> parse_commit_marker(const std::string& text);

// Marks `path` (a checkpoint directory or file of this user's) committed by m.rank of
// m.world at m.step. Throws std::invalid_argument with one line when `path` is not a
// checkpoint of this user's or m is out of range, std::system_error when writing fails.
void commit_checkpoint(const std::string& path, const commit_marker& m);

struct committed_checkpoint {
  std::string path;  // dir/NAME
  std::int64_t step = -1;
  std::int64_t world = 0;
};

// The checkpoint in `dir` with the highest step that all of its world's ranks committed
// (ties: the greater name); nullopt when there is none or `dir` does not exist. Throws
// std::system_error when `dir` exists but cannot be read.
std::optional<committed_checkpoint> newest_committed(const std::string& dir);

}  // namespace trainctl
