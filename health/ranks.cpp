#include "ranks.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <map>

#include "env_names.hpp"
#include "rank_variable.hpp"

namespace trainctl {
namespace {

// Reads at most `limit` bytes, in small pieces: most files here are tiny, and the
// supervisor's resident set should not grow with the largest environment it reads.
bool read_file(const std::string& path, std::string& out, size_t limit = 1 << 20) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.clear();
  char buf[4096];
  while (out.size() < limit && in.read(buf, sizeof buf).gcount() > 0) {
    out.append(buf, static_cast<size_t>(in.gcount()));
    if (!in) break;
  }
  if (out.size() > limit) out.resize(limit);
  return true;
}

std::string base_name(const std::string& s) {
  const size_t slash = s.rfind('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

}  // namespace

bool environ_has_rank(const std::string& blob) {
  static const char* vars[] = {"RANK=", "LOCAL_RANK=", "OMPI_COMM_WORLD_RANK=", "PMI_RANK=", "PMIX_RANK="};
  size_t start = 0;
  while (start < blob.size()) {
    size_t end = blob.find('\0', start);
    if (end == std::string::npos) end = blob.size();
    for (const char* v : vars) {
      const size_t n = std::char_traits<char>::length(v);
      if (end - start > n && blob.compare(start, n, v) == 0) return true;
    }
    start = end + 1;
  }
  return false;
}

std::string environ_value(const std::string& blob, const std::string& name) {
  const std::string key = name + "=";
  size_t start = 0;
  while (start < blob.size()) {
    size_t end = blob.find('\0', start);
    if (end == std::string::npos) end = blob.size();
    if (blob.compare(start, key.size(), key) == 0) return blob.substr(start + key.size(), end - start - key.size());
    start = end + 1;
  }
  return "";
}

std::string proc_environ_value(pid_t pid, const std::string& name, const std::string& proc) {
  std::string blob;
  if (!read_file(proc + "/" + std::to_string(pid) + "/environ", blob)) return "";
  return environ_value(blob, name);
}

int proc_rank(pid_t pid, const std::string& proc) {
  std::string blob;
  if (!read_file(proc + "/" + std::to_string(pid) + "/environ", blob)) return -1;
  const rank_variable r = rank_variable_of([&](const char* name) { return environ_value(blob, name); });
  if (r.name == nullptr) return -1;
  char* end = nullptr;
  const long n = std::strtol(r.text.c_str(), &end, 10);
  return *end == '\0' && n >= 0 && n < (1 << 24) ? static_cast<int>(n) : -1;
}

bool cmdline_names_launcher(const std::string& blob, const std::vector<std::string>& names) {
  std::vector<std::string> args;
  std::string cur;
  for (char c : blob) {
    if (c == '\0') {
      args.push_back(cur);
      cur.clear();
      if (args.size() >= 4) break;
    } else {
      cur += c;
    }
  }
  if (!cur.empty() && args.size() < 4) args.push_back(cur);
  for (size_t i = 0; i < args.size() && i < 3; ++i) {
    std::string b = base_name(args[i]);
    if (b.size() > 3 && b.compare(b.size() - 3, 3, ".py") == 0) b.resize(b.size() - 3);
    if (std::find(names.begin(), names.end(), b) != names.end()) return true;
    // python -m torch.distributed.run / deepspeed.launcher.runner
    if (args[i] == "-m" && i + 1 < args.size()) {
      const std::string& mod = args[i + 1];
      if (mod == "torch.distributed.run" || mod == "torch.distributed.launch") return true;
      for (const auto& n : names)
        if (mod == n || mod.compare(0, n.size() + 1, n + ".") == 0) return true;
    }
  }
  return false;
}

namespace {

// Field `n` (1-based, as proc(5) counts: 4 is ppid, 22 is starttime) of a stat line,
// as a number; -1 when missing. comm (field 2) may hold spaces and parentheses: the
// last ')' ends it. Runs for every process on the node at each scan: no streams.
long long stat_field(const std::string& text, int n) {
  size_t pos = text.rfind(')');
  if (pos == std::string::npos || n < 3) return -1;
  for (int field = 2; field < n; ++field) {
    pos = text.find(' ', pos + 1);
    if (pos == std::string::npos) return -1;
  }
  const char* start = text.c_str() + pos + 1;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(start, &end, 10);
  if (end == start || errno != 0 || (*end != ' ' && *end != '\n' && *end != '\0')) return -1;
  return v;
}

}  // namespace

unsigned long long parse_stat_start_time(const std::string& text) {
  const long long v = stat_field(text, 22);
  return v > 0 ? static_cast<unsigned long long>(v) : 0;
}

pid_t parse_stat_ppid(const std::string& text) {
  const long long v = stat_field(text, 4);
  return v >= 0 && v <= 0x7fffffff ? static_cast<pid_t>(v) : -1;
}

namespace {

// The children of every thread of `pid` (proc(5): /proc/PID/task/TID/children); false
// when the kernel does not offer the file (CONFIG_PROC_CHILDREN).
bool thread_children(const std::string& proc, pid_t pid, std::vector<pid_t>& out) {
  const std::string tasks = proc + "/" + std::to_string(pid) + "/task";
  DIR* d = opendir(tasks.c_str());
  // No task directory: gone since its parent listed it, or a /proc without one.
  if (d == nullptr) return access((proc + "/" + std::to_string(pid)).c_str(), F_OK) != 0;
  bool offered = true;
  std::string text;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string file = tasks + "/" + e->d_name + "/children";
    if (!read_file(file, text, 1 << 16)) {
      // A thread that ended since the listing is no loss; a missing file is.
      const std::string task_dir = tasks + "/" + e->d_name;
      if (access(task_dir.c_str(), F_OK) == 0 && access(file.c_str(), F_OK) != 0) offered = false;
      continue;
    }
    const char* p = text.c_str();
    while (*p != '\0') {
      char* end = nullptr;
      const long child = std::strtol(p, &end, 10);
      if (end == p) break;
      if (child > 0) out.push_back(static_cast<pid_t>(child));
      p = end;
    }
  }
  closedir(d);
  return offered;
}

// Every process's parent, from a walk of the whole of /proc: what the kernel said
// before children files existed, and what a whole-node search needs anyway.
std::multimap<pid_t, pid_t> all_children(const std::string& proc) {
  std::multimap<pid_t, pid_t> children;
  DIR* d = opendir(proc.c_str());
  if (d == nullptr) return children;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    std::string stat;
    if (!read_file(proc + "/" + e->d_name + "/stat", stat, 4096)) continue;
    const pid_t ppid = parse_stat_ppid(stat);
    if (ppid >= 0) children.emplace(ppid, static_cast<pid_t>(pid));
  }
  closedir(d);
  return children;
}

proc_info describe(const std::string& proc, pid_t pid, pid_t ppid, const std::vector<std::string>& launcher_names) {
  proc_info info;
  info.pid = pid;
  info.ppid = ppid;
  const std::string dir = proc + "/" + std::to_string(pid);
  std::string blob;
  if (read_file(dir + "/stat", blob, 4096)) info.start_time = parse_stat_start_time(blob);
  struct stat st {};
  info.ours = stat(dir.c_str(), &st) == 0 && st.st_uid == getuid();
  if (info.ours) {
    info.has_rank = read_file(dir + "/environ", blob) && environ_has_rank(blob);
    info.launcher = read_file(dir + "/cmdline", blob, 8192) && cmdline_names_launcher(blob, launcher_names);
  }
  return info;
}

}  // namespace

// From the root down, so that the cost follows the job's processes, not the node's: a
// supervisor on a node with 5,000 other processes reads only its own subtree. Only a
// kernel without children files (or a search from pid 1) walks the whole of /proc.
std::vector<proc_info> descendants(pid_t root, const std::vector<std::string>& launcher_names,
                                   const std::string& proc) {
  std::multimap<pid_t, pid_t> whole;
  bool walked = root == 1;
  if (walked) whole = all_children(proc);
  std::vector<proc_info> out;
  std::vector<pid_t> queue{root};
  std::vector<pid_t> kids;
  while (!queue.empty()) {
    const pid_t p = queue.back();
    queue.pop_back();
    kids.clear();
    if (!walked && !thread_children(proc, p, kids)) {
      whole = all_children(proc);  // no children files: the old way, once
      walked = true;
    }
    if (walked) {
      kids.clear();
      auto range = whole.equal_range(p);
      for (auto it = range.first; it != range.second; ++it) kids.push_back(it->second);
    }
    for (pid_t c : kids) {
      out.push_back(describe(proc, c, p, launcher_names));
      queue.push_back(c);
      if (out.size() > 100000) return out;  // bounded, whatever /proc says
    }
  }
  return out;
}

std::vector<pid_t> find_ranks(pid_t root, const std::vector<std::string>& launcher_names, bool command_is_rank,
                              const std::string& proc) {
  std::vector<pid_t> pids;
  for (const auto& p : find_rank_procs(root, launcher_names, command_is_rank, proc)) pids.push_back(p.pid);
  return pids;
}

pid_handle::pid_handle(const proc_info& found, const std::string& proc) : pid_(found.pid) {
  owned_fd fd(static_cast<int>(syscall(SYS_pidfd_open, found.pid, 0)));
  if (!fd) return;  // gone already
  // Opened first, checked second: if the pid was reused before the open, the start
  // time read now is the newcomer's and differs.
  std::string stat;
  if (!read_file(proc + "/" + std::to_string(found.pid) + "/stat", stat, 4096) || found.start_time == 0 ||
      parse_stat_start_time(stat) != found.start_time)
    return;
  fd_ = std::move(fd);
}

bool pid_handle::signal(int sig) const {
  return fd_ && syscall(SYS_pidfd_send_signal, fd_.get(), sig, nullptr, 0) == 0;
}

std::vector<proc_info> find_rank_procs(pid_t root, const std::vector<std::string>& launcher_names, bool command_is_rank,
                                       const std::string& proc) {
  const auto all = descendants(root, launcher_names, proc);
  std::map<pid_t, const proc_info*> by_pid;
  for (const auto& p : all) by_pid[p.pid] = &p;
  auto is_rank = [](const proc_info* p) { return p->ours && p->has_rank && !p->launcher; };
  std::vector<proc_info> ranks;
  for (const auto& p : all) {
    if (!is_rank(&p)) continue;
    // Topmost: no rank among its ancestors below root (that excludes DataLoader workers).
    bool under_rank = false;
    for (auto it = by_pid.find(p.ppid); it != by_pid.end(); it = by_pid.find(it->second->ppid))
      if (is_rank(it->second)) {
        under_rank = true;
        break;
      }
    if (!under_rank) ranks.push_back(p);
  }
  if (ranks.empty() && command_is_rank)
    for (const auto& p : all)
      if (p.ppid == root && p.ours && !p.launcher) ranks.push_back(p);
  return ranks;
}

std::vector<proc_info> find_job_rank_procs(const std::string& job_id, const std::vector<std::string>& launcher_names,
                                           const std::string& proc) {
  std::vector<proc_info> all = descendants(1, launcher_names, proc);
  std::map<pid_t, pid_t> parent;
  for (const auto& p : all) parent[p.pid] = p.ppid;
  // This process and what runs below it (its srun step, its eu-stack) are never ranks.
  std::map<pid_t, bool> mine;
  for (const auto& p : all) {
    bool below = false;
    for (pid_t q = p.pid; q > 1 && !below; q = parent.count(q) != 0 ? parent[q] : 0) below = q == getpid();
    mine[p.pid] = below;
  }
  auto topmost = [&](const std::map<pid_t, bool>& in_job) {
    std::vector<proc_info> ranks;
    for (const auto& p : all) {
      if (!in_job.at(p.pid)) continue;
      bool under_rank = false;
      for (auto it = parent.find(p.ppid); it != parent.end(); it = parent.find(it->second))
        if (in_job.count(it->first) != 0 && in_job.at(it->first)) {
          under_rank = true;
          break;
        }
      if (!under_rank) ranks.push_back(p);
    }
    return ranks;
  };
  std::map<pid_t, bool> in_job;  // ours, a rank, of this job, not a launcher
  for (const auto& p : all)
    in_job[p.pid] = p.ours && p.has_rank && !p.launcher && !mine[p.pid] &&
                    proc_environ_value(p.pid, env_var::kSlurmJobId, proc) == job_id;
  auto ranks = topmost(in_job);
  if (!ranks.empty()) return ranks;
  // `srun python train.py`: no rank variable but SLURM's own. The task of a job step
  // (SLURM_STEP_ID set) that is neither a launcher nor trainctl's supervisor.
  for (const auto& p : all) {
    in_job[p.pid] = false;
    if (!p.ours || p.launcher || mine[p.pid]) continue;
    std::string blob, cmd;
    if (!read_file(proc + "/" + std::to_string(p.pid) + "/environ", blob)) continue;
    if (environ_value(blob, env_var::kSlurmJobId) != job_id || environ_value(blob, env_var::kSlurmProcid).empty())
      continue;
    const std::string step = environ_value(blob, env_var::kSlurmStepId);
    if (step.empty() || step == "batch" || step == "extern") continue;
    read_file(proc + "/" + std::to_string(p.pid) + "/cmdline", cmd, 4096);
    const std::string argv0 = base_name(cmd.substr(0, cmd.find('\0')));
    if (argv0 == "trainctl-run" || argv0 == "slurmstepd") continue;
    in_job[p.pid] = true;
  }
  return topmost(in_job);
}

int zombie_wait_status(pid_t pid) {
  std::string stat;
  if (!read_file("/proc/" + std::to_string(pid) + "/stat", stat, 4096)) return -1;
  size_t pos = stat.rfind(')');
  if (pos == std::string::npos || pos + 2 >= stat.size() || stat[pos + 2] != 'Z') return -1;
  // Fields after comm: 3 is the state; exit_code is field 52.
  for (int field = 2; field < 52 && pos != std::string::npos; ++field) pos = stat.find(' ', pos + 1);
  if (pos == std::string::npos) return -1;
  return std::atoi(stat.c_str() + pos + 1);
}

bool live_process_of_mine(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid);
  struct stat st {};
  std::string s;
  if (pid <= 0 || stat(dir.c_str(), &st) != 0 || st.st_uid != getuid() || !read_file(dir + "/stat", s, 4096))
    return false;
  const size_t pos = s.rfind(')');
  return pos != std::string::npos && pos + 2 < s.size() && s[pos + 2] != 'Z' && s[pos + 2] != 'X';
}

bool is_fault_signal(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGABRT || sig == SIGFPE;
}

}  // namespace trainctl
