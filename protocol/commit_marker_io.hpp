// What writing and reading commit markers share (committed_saves.cpp writes them,
// resume_scan.cpp reads them): a marker's one line and its limits, their names, the
// checks of who made what, and reading one marker without following a link or blocking.
// Private to libtrainctl/src.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trainctl {

struct commit_marker {
  std::int64_t step = -1;
  std::int64_t rank = -1;
  std::int64_t world = 0;
  std::string run;      // TRAINCTL_RUN_ID of the run that saved ("" outside SLURM)
  std::string attempt;  // the job and requeue that wrote it (save_attempt); "" in a version 1 marker
  std::string name;     // the checkpoint it commits (set by commit_checkpoint); "" in a version 1 marker
  int version = 2;      // 1: written by trainctl before markers named their attempt and checkpoint
};

// One line for `m`, and back: nullopt for anything but what format_commit_marker wrote
// (or a version 1 marker of an earlier trainctl, which resume still reads).
std::string format_commit_marker(const commit_marker& m);
std::optional<commit_marker> parse_commit_marker(const std::string& text);

// What a marker may hold: the largest world and step, and a checkpoint name's bytes
// (NAME_MAX on the file systems checkpoints live on).
constexpr std::int64_t kMaxWorld = 1 << 20;
constexpr std::int64_t kMaxStep = std::int64_t{1} << 62;
constexpr std::size_t kMaxNameBytes = 255;
// An attempt as a marker names it: 1 to 64 of [A-Za-z0-9_.-].
bool valid_attempt(std::string_view a);

constexpr const char* kMarkerInside = ".trainctl-committed.";  // PATH/.trainctl-committed.RANK
constexpr std::size_t kMaxMarkerBytes = 1024;

// The prefix of the markers beside a checkpoint file NAME: .NAME.trainctl-committed.
inline std::string marker_prefix_beside(const std::string& name) { return "." + name + kMarkerInside; }
inline std::string marker_name(const std::string& prefix, std::int64_t rank) { return prefix + std::to_string(rank); }

inline bool owned_by_me(const struct stat& st) { return st.st_uid == ::geteuid(); }

// A checkpoint's name as a marker holds it: bytes other than these as %XX.
inline bool marker_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-' || c == '=' || c == '+' || c == ',';
}
std::string encode_marker_name(const std::string& name);

// "" when `path` is no link, or a link of this user's or root's; else what it is ("a
// link of uid 1002"), which nothing of trainctl's follows to a save.
std::string foreign_link(const std::string& path);

// The marker `name` relative to `dir` when it is a small regular file of this user's
// and says what a marker says; opened without following a link or blocking.
std::optional<commit_marker> read_marker(int dir, const std::string& name);

// Removes `name` in `dir` when it is a regular file of this user's.
void remove_own_marker(int dir, const std::string& name) noexcept;

}  // namespace trainctl
