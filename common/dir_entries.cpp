#include "dir_entries.hpp"

#include <dirent.h>
#include <unistd.h>

#include <memory>

namespace trainctl {

std::vector<std::string> dir_entry_names(int dir_fd) {
  std::vector<std::string> names;
  const int own = dup(dir_fd);
  if (own < 0) return names;
  const std::unique_ptr<DIR, int (*)(DIR*)> d(fdopendir(own), closedir);
  if (!d) {
    close(own);
    return names;
  }
  rewinddir(d.get());
  while (const dirent* e = readdir(d.get())) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  return names;
}

}  // namespace trainctl
