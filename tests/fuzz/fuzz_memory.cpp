// The cgroup and meminfo readers on arbitrary file contents: the input is split at
// NUL bytes into /proc/self/cgroup, /proc/self/mountinfo, /proc/meminfo and one
// memory.max/memory.current pair of a fixture tree.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cgroup_memory.hpp"

namespace {
std::string root() {
  static std::string dir = [] {
    char tmpl[] = "/tmp/trainctl-fuzz-memory-XXXXXX";
    std::string d = mkdtemp(tmpl);
    for (const char* sub : {"/proc", "/proc/self", "/sys", "/sys/fs", "/sys/fs/cgroup", "/sys/fs/cgroup/a"})
      mkdir((d + sub).c_str(), 0700);
    return d;
  }();
  return dir;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> parts(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0 && parts.size() < 6)
      parts.emplace_back();
    else
      parts.back() += static_cast<char>(data[i]);
  }
  parts.resize(6);
  const std::string r = root();
  const char* files[] = {"/proc/self/cgroup",
                         "/proc/self/mountinfo",
                         "/proc/meminfo",
                         "/sys/fs/cgroup/a/memory.max",
                         "/sys/fs/cgroup/a/memory.current",
                         "/sys/fs/cgroup/a/memory.stat"};
  for (int i = 0; i < 6; ++i) std::ofstream(r + files[i], std::ios::trunc) << parts[i];
  if (auto m = trainctl::read_memory(r)) {
    (void)m->available();
    (void)m->used_percent();
  }
  trainctl::meminfo_field(parts[2], "MemAvailable");
  trainctl::memory_stat_field(parts[5], "inactive_file");
  return 0;
}
