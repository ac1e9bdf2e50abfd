// Appends to a file that many processes of one user append to, from several nodes (a job
// array's run events, a job's slow_nodes), kept under a size: past `max` bytes the oldest
// whole lines go, down to half of it. Every appender takes the file's lock for its write;
// the trim rewrites the file in place (the inode stays, so a process that opened it
// earlier still appends to the file others read) while it holds the lock. A lock not had
// within about a second (a stuck holder, a filesystem without locks) still appends, and
// leaves the trim to a later append.
#pragma once

#include <cstddef>
#include <string>

namespace trainctl {

// `fd`: open on `path` with O_APPEND, already checked to be this user's regular file.
// "" or why the append failed (a failed trim is no failure: the line is in).
std::string append_bounded(int fd, const std::string& path, const std::string& text, std::size_t max);

// Removes this user's regular files directly in `dir` whose names are all digits (one
// array's run events each) and that nothing changed for `max_age_s`. The number removed.
int sweep_old_files(const std::string& dir, long max_age_s);

}  // namespace trainctl
