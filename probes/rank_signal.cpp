#include "rank_signal.hpp"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <sstream>
#include <thread>
#include <vector>

#include "env_names.hpp"
#include "node_names.hpp"
#include "parse.hpp"
#include "ranks.hpp"
#include "slurm_job.hpp"
#include "status_probe.hpp"

namespace trainctl {
namespace {

// Whether `pid` has reached its first check() in the job's node state here: a "rank"
// line of probe_job_here (status_probe.hpp) with that pid and a heartbeat.
bool has_checked_in(const std::string& job, pid_t pid) {
  std::istringstream in(probe_job_here(job));
  const std::string who = " pid=" + std::to_string(pid) + " ";
  for (std::string l; std::getline(in, l);) {
    if (l.rfind("rank ", 0) != 0 || l.find(who) == std::string::npos) continue;
    const size_t at = l.find(" beat_ms=");
    return at != std::string::npos && std::strtoll(l.c_str() + at + 9, nullptr, 10) > 0;
  }
  return false;
}

}  // namespace

int signal_rank_here(const std::string& spec) {
  const std::vector<std::string_view> parts = split(spec, ':');
  int sig = 0;
  if (parts.size() == 3 && parts[2] == "STOP") sig = SIGSTOP;
  if (parts.size() == 3 && parts[2] == "CONT") sig = SIGCONT;
  if (parts.size() == 3 && parts[2] == "KILL") sig = SIGKILL;
  const std::string job = parts.empty() ? "" : std::string(parts[0]);
  long long rank = -1;
  try {
    if (parts.size() == 3) rank = parse_int(parts[1], 0, 1 << 24);
  } catch (const parse_error&) {
  }
  if (sig == 0 || rank < 0 || !is_job_id(job) || job.find('_') != std::string::npos) {
    std::fprintf(stderr, "--signal-rank-here: '%s'; accepted: JOB:RANK:STOP|CONT|KILL\n", spec.substr(0, 60).c_str());
    return 2;
  }
  const std::vector<std::string> launchers{"torchrun", "accelerate", "deepspeed", "mpirun", "mpiexec", "srun", "orted"};
  const std::string node = node_name();
  for (const proc_info& p : find_job_rank_procs(job, launchers)) {
    if (proc_rank(p.pid) != rank) continue;  // `srun python train.py`: SLURM_PROCID
    // Where nodes share a host (test beds), every node's ranks are visible: this node's only.
    const std::string on = proc_environ_value(p.pid, env_var::kSlurmdNodename);
    if (!on.empty() && on != node) continue;
    // A rank killed before its first check() has no heartbeat slot: its supervisor sees
    // a death but cannot tell whose (the drill killed rank 1 of task 2 as soon as rank 0
    // began, and the death came without its rank). Up to 30 s for it to check in.
    if (sig == SIGKILL)
      for (int i = 0; i < 150 && !has_checked_in(job, p.pid); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const pid_handle h(p);
    if (!h.signal(sig)) continue;
    std::string log_dir = proc_environ_value(p.pid, env_var::kTrainctlLogDir);
    if (log_dir.empty()) log_dir = proc_environ_value(p.pid, env_var::kSlurmSubmitDir);
    std::printf("signalled rank=%lld pid=%d host=%s log_dir=%s\n", rank, static_cast<int>(p.pid), node.c_str(),
                log_dir.c_str());
    break;
  }
  return 0;
}

}  // namespace trainctl
