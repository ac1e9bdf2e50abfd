// Which checkpoints every rank committed, and the newest of them to resume from.
//
// A rank commits its part of a checkpoint (ctl.saved(step, path), or the end of a write
// handed off with save_begin) after its files are in place: a small marker per rank,
// written whole (a temporary name of its own, fsync, rename), inside the checkpoint when
// it is a directory (PATH/.trainctl-committed.RANK) or beside it when it is a file
// (DIR/.NAME.trainctl-committed.RANK). Each marker names the step, the rank, the world
// size, the run (TRAINCTL_RUN_ID), the attempt that wrote it (the job and its requeue)
// and the checkpoint it commits (its name): a reader counts a checkpoint committed when
// every rank of its world has a marker of one save, made by one attempt, naming it.
// So a checkpoint saved again in place by a later attempt (HF's checkpoint-N after a
// resume from before N) is not complete with the earlier attempt's markers, and a
// directory copied under another name commits nothing. A save begun again in place by
// the same rank removes its own marker first (uncommit_checkpoint).
//
// The checkpoint directory is often one a team shares: a checkpoint or a marker counts
// only when it is this user's, reached through no link (O_NOFOLLOW at each name), a
// directory or a regular file as it claims, and small; nothing there is opened so that it
// can block. The directory given itself may be a link (to scratch) only when the link is
// this user's or root's: a teammate's link in its place is refused.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "commit_marker_io.hpp"
#include "env.hpp"

namespace trainctl {

// The attempt a rank's save belongs to: "<SLURM_JOB_ID>.<SLURM_RESTART_COUNT>" (a
// requeued job keeps its id and counts up), "local.0" outside SLURM.
std::string save_attempt(const env_lookup& env);

// Marks `path` (a checkpoint directory or file of this user's) committed by m.rank of
// m.world at m.step; m.name is set from the path. Throws std::invalid_argument with one
// line when `path` is not a checkpoint of this user's (or lies behind another user's
// link) or m is out of range, std::system_error when the marker cannot be written (a
// directory, or another user's file, squats its name; the file system refuses).
void commit_checkpoint(const std::string& path, commit_marker m);

// A save of this rank begins again at `path`: its marker there, if any, goes, so the
// checkpoint is uncommitted until this save's commit. Nothing when there is none, or
// `path` is no checkpoint of this user's yet. Never throws.
void uncommit_checkpoint(const std::string& path, std::int64_t rank) noexcept;

struct committed_checkpoint {
  std::string path;  // dir/NAME
  std::int64_t step = -1;
  std::int64_t world = 0;
};

// What a look for the save to resume from found.
struct resume_scan {
  std::optional<committed_checkpoint> found;  // the newest every rank committed
  // Saves it could not trust: newer than `found` (any, when nothing was found; a save
  // with no marker counts only then, having no step to compare).
  int untrusted = 0;
  // One line: how many and why, e.g. "2 saves carry no trainctl marker (...); the save
  // at step 200 is not committed by rank 3 of 4"; "" when untrusted is 0.
  std::string why;
  // When others may remove or replace saves in the directory: one line; else "".
  std::string exposed;
};

// Looks through `dir`: the checkpoint with the highest step that all of its world's ranks
// committed (ties: the greater name), and what it could not trust. `found` is empty when
// `dir` does not exist. Throws std::system_error when `dir` exists but cannot be read,
// or is a link that is neither this user's nor root's.
resume_scan scan_saves(const std::string& dir);

// scan_saves(dir).found.
std::optional<committed_checkpoint> newest_committed(const std::string& dir);

}  // namespace trainctl
