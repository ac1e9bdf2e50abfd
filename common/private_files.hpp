// This user's own files under the per-user state directory (the shared home): made
// private, appended in one write, read back only when they are this user's regular
// file. Never through a symbolic link, never blocking on a FIFO.
#pragma once

#include <cstddef>
#include <string>

namespace trainctl {

// mkdir -p, each directory it makes 0700 (the per-user state under the home).
bool make_private_dirs(const std::string& dir);

// Appends `text` in one write to this user's regular file `path` (created 0600, its
// directories 0700; never through a symlink, never blocking on a FIFO). "" or why not.
// With `max`, the file is kept under max bytes (bounded_append.hpp).
std::string append_private(const std::string& path, const std::string& text, std::size_t max = 0);
// The first `max` bytes of this user's regular file `path` ("" when missing), or with
// `newest` its last `max` bytes (an append-only file's newest records). Anything else
// (a symlink, a FIFO, another user's file) is refused: *why says so in one line.
std::string read_private(const std::string& path, std::size_t max, std::string* why, bool newest = false);

}  // namespace trainctl
