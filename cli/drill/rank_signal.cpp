#include "rank_signal.hpp"

#include <csignal>
#include <cstdio>
#include <vector>

#include "bad_nodes.hpp"
#include "parse.hpp"
#include "ranks.hpp"
#include "slurm_job.hpp"

namespace trainctl {

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
    if (proc_environ_value(p.pid, "RANK") != std::to_string(rank)) continue;
    // Where nodes share a host (test beds), every node's ranks are visible: this node's only.
    const std::string on = proc_environ_value(p.pid, "SLURMD_NODENAME");
    if (!on.empty() && on != node) continue;
    const pid_handle h(p);
    if (!h.signal(sig)) continue;
    std::string log_dir = proc_environ_value(p.pid, "TRAINCTL_LOG_DIR");
    if (log_dir.empty()) log_dir = proc_environ_value(p.pid, "SLURM_SUBMIT_DIR");
    std::printf("signalled rank=%lld pid=%d host=%s log_dir=%s\n", rank, static_cast<int>(p.pid), node.c_str(),
                log_dir.c_str());
    break;
  }
  return 0;
}

}  // namespace trainctl
