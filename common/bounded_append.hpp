// Appends to a file that many processes of one user append to, from several nodes (a job
// array's run events, a job's slow_nodes), kept under a size: past `max` bytes the oldest
// whole lines go, down to half of it. Every appender takes the file's lock for its write;
// the trim rewrites the file in place (the inode stays, so a process that opened it
// earlier still appends to the file others read) while it holds the lock. A lock not had
// in time (a stuck holder, a filesystem without locks, another user who can read the file
// and holds its lock) still appends, and leaves the trim to a later append.
#pragma once

#include <cstddef>
#include <string>

namespace trainctl {

// `fd`: open on `path` with O_APPEND, already checked to be this user's regular file.
// `lock_wait_ms`: how long to wait for the lock; 0 in a directory others can read, where
// anyone who can open the file can hold its lock. "" or why the append failed (a failed
// trim is no failure: the line is in).
std::string append_bounded(int fd, const std::string& path, const std::string& text, std::size_t max,
                           int lock_wait_ms = 1000);

// Removes this user's regular files directly in `dir` whose names are all digits (one
// array's run events each) and that nothing changed for `max_age_s`. The number removed.
int sweep_old_files(const std::string& dir, long max_age_s);

}  // namespace trainctl
