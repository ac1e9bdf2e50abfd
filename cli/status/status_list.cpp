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
namespace {

// The caller's pending jobs held by a hold (JobHeldUser, JobHeldAdmin): "ID REASON" each,
// squeue's ranges kept ("4242_[2-5]"). None when squeue cannot say.
std::vector<std::string> held_jobs() {
  child_spec q;
  q.argv = {"squeue", "-h", "-u", std::to_string(getuid()), "-t", "PENDING", "-o", "%i %r"};
  q.deadline = std::chrono::milliseconds(10000);
  const child_result r = run_child(q);
  std::vector<std::string> held;
  if (!r.ok()) return held;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    const std::size_t space = line.find(' ');
    if (space == std::string::npos || line.compare(space + 1, 7, "JobHeld") != 0) continue;
    std::string id = line.substr(0, space);
    const std::size_t throttle = id.find('%');  // "4242_[2-5%1]": scontrol takes "4242_[2-5]"
    if (throttle != std::string::npos) id = id.substr(0, throttle) + "]";
    if (id.find_first_not_of("0123456789_[],-") != std::string::npos) continue;
    held.push_back(id + " " + line.substr(space + 1, line.find_first_of(" \t", space + 1) - space - 1));
  }
  return held;
}

}  // namespace

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
  const std::vector<std::string> held = held_jobs();
  std::fputs(
      (json ? format_job_list_json(supervised, without, held) : format_job_list(supervised, without, held)).c_str(),
      stdout);
  return 0;
}

}  // namespace trainctl::commands
