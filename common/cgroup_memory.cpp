#include "cgroup_memory.hpp"

#include <fstream>
#include <sstream>
#include <vector>

namespace trainctl {
namespace {

// cgroup v1 reports "no limit" as PAGE_COUNTER_MAX rounded to a page, near 2^63.
constexpr std::uint64_t kNoLimit = 1ull << 60;

std::optional<std::string> slurp(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::optional<std::uint64_t> read_number(const std::string& path) {
  auto text = slurp(path);
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::string word;
  if (!(in >> word)) return std::nullopt;
  if (word == "max") return kNoLimit;
  try {
    size_t used = 0;
    unsigned long long v = std::stoull(word, &used);
    if (used != word.size()) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

struct mount_entry {
  std::string root;   // the part of the hierarchy mounted
  std::string point;  // where
};

// Finds the mount of the v2 hierarchy, or of the v1 hierarchy with the memory controller.
std::optional<mount_entry> find_mount(const std::string& mountinfo, bool v2) {
  std::istringstream in(mountinfo);
  std::string line;
  while (std::getline(in, line)) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream left(line.substr(0, dash)), right(line.substr(dash + 3));
    std::string id, parent, dev, root, point, fstype, source, super;
    if (!(left >> id >> parent >> dev >> root >> point) || !(right >> fstype >> source >> super)) continue;
    if (v2 && fstype == "cgroup2") return mount_entry{root, point};
    if (!v2 && fstype == "cgroup") {
      std::istringstream opts(super);
      std::string opt;
      while (std::getline(opts, opt, ','))
        if (opt == "memory") return mount_entry{root, point};
    }
  }
  return std::nullopt;
}

std::string relative_to(const std::string& path, const std::string& mount_root) {
  if (mount_root == "/" || mount_root.empty()) return path;
  if (path.compare(0, mount_root.size(), mount_root) == 0) return path.substr(mount_root.size());
  return path;
}

// Walks from the process's cgroup up to the mount point and keeps the tightest limit.
std::optional<memory_reading> read_cgroup(const std::string& root, const std::string& cg_path, const mount_entry& m,
                                          bool v2) {
  const char* limit_file = v2 ? "memory.max" : "memory.limit_in_bytes";
  const char* usage_file = v2 ? "memory.current" : "memory.usage_in_bytes";
  const char* inactive = v2 ? "inactive_file" : "total_inactive_file";
  std::string rel = relative_to(cg_path, m.root);
  std::optional<memory_reading> best;
  while (true) {
    const std::string dir = root + m.point + (rel == "/" ? "" : rel);
    auto limit = read_number(dir + "/" + limit_file);
    auto usage = read_number(dir + "/" + usage_file);
    if (limit && usage && *limit < kNoLimit && (!best || *limit < best->limit)) {
      memory_reading r;
      r.limit = *limit;
      std::uint64_t cache = 0;
      if (auto stat = slurp(dir + "/memory.stat")) cache = memory_stat_field(*stat, inactive).value_or(0);
      r.used = *usage > cache ? *usage - cache : 0;
      r.source = std::string(v2 ? "cgroup v2 " : "cgroup v1 ") + (rel.empty() ? "/" : rel);
      best = r;
    }
    if (rel.empty() || rel == "/") break;
    const size_t slash = rel.rfind('/');
    rel = slash == 0 || slash == std::string::npos ? "/" : rel.substr(0, slash);
  }
  return best;
}

// The memory cgroups process `pid` is in (a v2 line, a v1 line with the memory
// controller), each with its hierarchy's mount: "0::/path" or "4:memory:/path".
struct memory_cgroup {
  std::string path;
  bool v2 = false;
  mount_entry mount;
};
std::vector<memory_cgroup> memory_cgroups(const std::string& root, const std::string& pid) {
  std::vector<memory_cgroup> out;
  const auto cgroups = slurp(root + "/proc/" + pid + "/cgroup");
  const auto mountinfo = slurp(root + "/proc/" + pid + "/mountinfo");
  if (!cgroups || !mountinfo) return out;
  std::istringstream in(*cgroups);
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const bool v2 = line.compare(0, a, "0") == 0 && controllers.empty();
    bool v1_memory = false;
    std::istringstream cs(controllers);
    std::string c;
    while (std::getline(cs, c, ',')) v1_memory |= c == "memory";
    if (!v2 && !v1_memory) continue;
    if (auto mount = find_mount(*mountinfo, v2)) out.push_back({line.substr(b + 1), v2, *mount});
  }
  return out;
}

}  // namespace

std::optional<std::uint64_t> meminfo_field(const std::string& text, const std::string& field) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, field.size(), field) != 0 || line.size() <= field.size() || line[field.size()] != ':') continue;
    std::istringstream rest(line.substr(field.size() + 1));
    unsigned long long kb = 0;
    std::string unit;
    if (!(rest >> kb)) return std::nullopt;
    rest >> unit;
    if (kb > (1ull << 50)) return std::nullopt;
    return unit == "kB" ? kb * 1024 : kb;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> memory_stat_field(const std::string& text, const std::string& field) {
  std::istringstream in(text);
  std::string key;
  unsigned long long value = 0;
  while (in >> key >> value)
    if (key == field) return value;
  return std::nullopt;
}

// SLURM's job cgroup above a step's (.../job_<id>/step_<n>/...): the path up to
// job_<id>, or `path` when it holds none.
std::string job_cgroup_of(const std::string& path) {
  for (std::size_t at = path.rfind("/job_"); at != std::string::npos;
       at = at == 0 ? std::string::npos : path.rfind("/job_", at - 1)) {
    const std::size_t end = path.find('/', at + 1);
    const std::string id = path.substr(at + 5, end == std::string::npos ? std::string::npos : end - at - 5);
    if (!id.empty() && id.find_first_not_of("0123456789") == std::string::npos)
      return end == std::string::npos ? path : path.substr(0, end);
  }
  return path;
}

std::optional<memory_reading> read_memory(const std::string& root, const std::string& pid, bool whole_job) {
  std::optional<memory_reading> best;
  for (const memory_cgroup& m : memory_cgroups(root, pid)) {
    auto r = read_cgroup(root, whole_job ? job_cgroup_of(m.path) : m.path, m.mount, m.v2);
    if (r && (!best || r->limit < best->limit)) best = r;
  }
  if (auto meminfo = slurp(root + "/proc/meminfo")) {
    auto total = meminfo_field(*meminfo, "MemTotal");
    auto avail = meminfo_field(*meminfo, "MemAvailable");
    if (total && avail && *avail <= *total) {
      // The node bounds every cgroup too: a job limit above what the node has left
      // does not protect the job.
      if (!best || *avail < best->available()) {
        memory_reading node;
        node.limit = *total;
        node.used = *total - *avail;
        node.source = best ? "node (below " + best->source + ")" : "node";
        best = node;
      }
    }
  }
  return best;
}

oom_counter find_oom_counter(const std::string& root, const std::string& pid) {
  for (const memory_cgroup& m : memory_cgroups(root, pid)) {
    const std::string rel = relative_to(m.path, m.mount.root);
    oom_counter o;
    o.path = root + m.mount.point + (rel == "/" ? "" : rel) + (m.v2 ? "/memory.events" : "/memory.oom_control");
    o.source = std::string(m.v2 ? "cgroup v2 " : "cgroup v1 ") + (rel.empty() ? "/" : rel);
    if (read_oom_kills(o)) return o;
  }
  oom_counter node{root + "/proc/vmstat", "node"};
  return read_oom_kills(node) ? node : oom_counter{};
}

std::optional<std::uint64_t> read_oom_kills(const oom_counter& c) {
  if (c.path.empty()) return std::nullopt;
  const auto text = slurp(c.path);
  if (!text) return std::nullopt;
  return memory_stat_field(*text, "oom_kill");
}

bool memory_crossed(const memory_reading& r, const threshold& t) {
  switch (t.type) {
    case threshold::kind::percent:  // left, as for the GPU and in trainwatch
      return 100.0 - r.used_percent() < t.percent;
    case threshold::kind::bytes:
      return r.available() < t.bytes;
    case threshold::kind::none:
      break;
  }
  return false;
}

}  // namespace trainctl
