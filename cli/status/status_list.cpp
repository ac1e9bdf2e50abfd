// trainctl status with no JOB: the caller's running jobs that trainctl supervises, one
// line each (id, name, nodes, ranks, deadline, findings), as `squeue --me` lists jobs
// and `kubectl get pods` pods. Each job is looked at as `trainctl status JOB` does (one
// srun --overlap task per node reads the node state), one job after the other.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "job_access.hpp"
#include "job_status.hpp"
#include "node_state.hpp"
#include "parse.hpp"
#include "slurm_job.hpp"
#include "subprocess.hpp"

namespace trainctl::commands {

int list_job_status(const std::string& who, bool json) {
  child_spec q;
  q.argv = {"squeue", "-h", "-u", std::to_string(getuid()), "-t", "RUNNING", "-o", "%i"};
  q.deadline = std::chrono::milliseconds(10000);
  q.merge_stderr = true;  // squeue's own line says why it failed
  const child_result listed = run_child(q);
  if (!listed.ok()) {
    const std::string said = listed.output.substr(0, listed.output.find('\n'));
    std::fprintf(stderr, "%s: status: cannot list your running jobs: %s\n", who.c_str(),
                 said.empty() ? listed.error.c_str() : said.c_str());
    return 1;
  }
  std::vector<job_status> supervised;
  std::vector<std::string> without;
  std::istringstream ids(listed.output);
  for (std::string id; std::getline(ids, id);) {
    if (!is_job_id(id)) continue;  // squeue's own words, not a job
    std::string error;
    const auto info = show_job_record(id, std::chrono::milliseconds(10000), &error);
    if (!info || info->state != "RUNNING") continue;  // ended since squeue listed it
    child_spec d;
    d.argv = srun_helper_on_each_node(*info, {"--status-here", info->id});
    d.parent_death_signal = SIGTERM;
    d.deadline = std::chrono::milliseconds(20000);
    d.merge_stderr = true;
    const child_result r = run_child(d);
    status_job facts;
    facts.id = info->id;
    facts.name = info->name;
    facts.state = info->state;
    facts.node_list = info->node_list;
    facts.end_ms = info->end_ms;
    facts.now_ms = unix_now_ms();
    job_status s = parse_status_lines(r.output, facts);
    bool found = !s.ranks.empty();
    for (const auto& n : s.nodes) found = found || n.supervised;
    if (found)
      supervised.push_back(std::move(s));
    else
      without.push_back(info->id);
  }
  std::fputs((json ? format_job_list_json(supervised, without) : format_job_list(supervised, without)).c_str(), stdout);
  return 0;
}

}  // namespace trainctl::commands
