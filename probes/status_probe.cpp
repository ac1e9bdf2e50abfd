// The node side of trainctl status (status_probe.hpp says what it prints).
#include "status_probe.hpp"

#include <dirent.h>
#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "beat_fields.hpp"
#include "cgroup_memory.hpp"
#include "deadline_fields.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "error_fields.hpp"
#include "node_names.hpp"
#include "node_state.hpp"
#include "node_state_file.hpp"
#include "notice_fields.hpp"
#include "publisher_fields.hpp"
#include "ranks.hpp"
#include "state_dir.hpp"
#include "switch_fields.hpp"

namespace trainctl {
namespace {

// One line stays one line, whatever a path or name holds.
std::string one_line(std::string text) {
  std::replace_if(
      text.begin(), text.end(), [](char c) { return c == '\n' || c == '\r'; }, '?');
  return text;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The job's node states on this node: those its ranks were given (TRAINCTL_STATE, set
// by the supervisor) and the default names <job>.<step>-<node> in this user's state
// directory (ranks that publish without a supervisor).
std::vector<std::string> job_state_paths(const std::string& job_id, const std::string& node) {
  static const std::vector<std::string> kLaunchers{"torchrun", "accelerate", "deepspeed", "mpirun",
                                                   "mpiexec",  "srun",       "orted"};
  std::vector<std::string> paths;
  auto add = [&](const std::string& p) {
    if (!p.empty() && p[0] == '/' && std::find(paths.begin(), paths.end(), p) == paths.end()) paths.push_back(p);
  };
  for (const auto& r : find_job_rank_procs(job_id, kLaunchers))
    if (node.empty() || proc_environ_value(r.pid, env_var::kSlurmdNodename) == node)
      add(proc_environ_value(r.pid, env_var::kTrainctlState));
  const std::string dir = state_dir();
  if (DIR* d = opendir(dir.c_str())) {
    while (const dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.compare(0, job_id.size() + 1, job_id + ".") != 0 ||
          name.find('.', job_id.size() + 1) != std::string::npos)
        continue;  // not this job's, or a .lock / temporary file
      if (!node.empty() && !ends_with(name, "-" + node)) continue;
      add(dir + "/" + name);
    }
    closedir(d);
  }
  return paths;
}

// A beat's process, if it is still a process of this job (a pid is reused).
bool live_rank_of_job(int pid, const std::string& job_id) {
  return pid > 0 && kill(pid, 0) == 0 && proc_environ_value(pid, env_var::kSlurmJobId) == job_id;
}

int straggler_agreements_of(int pid) {
  const std::string v = proc_environ_value(pid, env_var::kTrainctlStragglerAgreements);
  const long n = v.empty() ? 0 : std::strtol(v.c_str(), nullptr, 10);
  return n > 0 && n < 1000000 ? static_cast<int>(n) : 5;
}

void print_state(std::string& out, const std::string& host, const node_state& n, const std::string& job_id) {
  char line[512];
  std::snprintf(
      line, sizeof line,
      "node host=%s now_ms=%lld flags=%u deadline_ms=%lld supervised=%d published_ms=%lld longest_save_ms=%lld\n",
      host.c_str(), static_cast<long long>(unix_now_ms()), notice_fields::flags(n),
      static_cast<long long>(deadline_fields::deadline_ms(n)), publisher_fields::supervised(n) ? 1 : 0,
      static_cast<long long>(publisher_fields::beat_ms(n)), static_cast<long long>(beat_fields::longest_save_ms(n)));
  out += line;
  for (const auto& b : n.beats) {
    const beat_fields::beat_view v = beat_fields::read(b);
    const int pid = v.pid;
    const std::string error = error_fields::read(b);
    if (pid > 0 && !error.empty() && !live_rank_of_job(pid, job_id)) {  // kept for its supervisor
      std::snprintf(line, sizeof line, "died host=%s rank=%d pid=%d error=", host.c_str(), v.rank, pid);
      out += line + error + "\n";
      continue;
    }
    if (!live_rank_of_job(pid, job_id)) continue;
    const std::int64_t beat = v.beat_ms;
    int rank = v.rank;
    if (beat == 0) {  // no check() yet: the rank is the process's own variable
      const std::string r = proc_environ_value(pid, env_var::kRank);
      rank = r.empty() ? -1 : std::atoi(r.c_str());
    }
    const auto mem = read_memory("", std::to_string(pid));
    std::snprintf(line, sizeof line,
                  "rank host=%s rank=%d pid=%d step=%lld beat_ms=%lld step_us=%lld slow=%d agreements=%d "
                  "mem_free=%llu mem_limit=%llu\n",
                  host.c_str(), rank, pid, static_cast<long long>(beat == 0 ? -1 : v.step),
                  static_cast<long long>(beat), static_cast<long long>(v.step_us), v.slow, straggler_agreements_of(pid),
                  static_cast<unsigned long long>(mem ? mem->available() : 0),
                  static_cast<unsigned long long>(mem ? mem->limit : 0));
    out += line;
  }
  for (const auto& s : switch_fields::ready(n)) {
    const bool exit = s.kind == switch_kind::exit;
    out += "switch host=" + host + " kind=" + (exit ? "exit" : "save") + " name=" + one_line(s.name) +
           " present=" + (exit && s.token != 0 ? "1" : "0") + " touches=" + std::to_string(exit ? 0 : s.count) +
           " path=" + one_line(s.path) + "\n";
  }
}

}  // namespace

std::string probe_job_here(const std::string& job_id) {
  const std::string node = env_text(env_var::kSlurmdNodename);
  const std::string host = node.empty() ? node_name() : node;
  std::string out;
  for (const auto& path : job_state_paths(job_id, node)) {
    std::string why;
    const auto state = read_node_state(path, &why);
    if (state)
      print_state(out, host, *state, job_id);
    else if (why.find(std::strerror(ENOENT)) == std::string::npos)  // gone since it was listed: the step ended
      out += "error host=" + host + " " + one_line(why) + "\n";
  }
  if (out.empty()) out = "error host=" + host + " no node state of job " + job_id + " here (no rank has started)\n";
  return out;
}

int run_status_probe(const std::string& job_id, std::chrono::milliseconds every) {
  const std::string node = env_text(env_var::kSlurmdNodename);
  const std::string host = node.empty() ? node_name() : node;
  for (;;) {
    const std::string out = probe_job_here(job_id) + "end host=" + host + "\n";
    // The reader is gone (its srun ended): so is the point of going on.
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) return 0;
    if (every.count() <= 0) return 0;
    std::this_thread::sleep_for(every);
  }
}

}  // namespace trainctl
