// Listing a directory this process opened itself (O_DIRECTORY, usually O_NOFOLLOW): the
// one way the tools read a directory's names, so none forgets what a listing through a
// descriptor needs (a duplicate shares the offset of an earlier read; fdopendir owns the
// descriptor it is given).
#pragma once

#include <string>
#include <vector>

namespace trainctl {

// The names in the directory open as `dir_fd`, without "." and "..", read from its start
// whatever was read through it before; empty when it cannot be read. A name says nothing
// of what it names: the caller checks each entry as it opens it (fstatat with
// AT_SYMLINK_NOFOLLOW, openat with O_NOFOLLOW), as the directory may be shared.
std::vector<std::string> dir_entry_names(int dir_fd);

}  // namespace trainctl
