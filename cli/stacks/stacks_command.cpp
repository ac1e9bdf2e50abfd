// trainctl stacks JOB: every rank's stacks of a running
// job, taken on its nodes by trainctl-run's --dump-stacks-here helper, and one line
// saying where most ranks are. Runs on a login node as the job's user.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "collective_verdict.hpp"
#include "commands.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "hang_verdict.hpp"
#include "job_access.hpp"
#include "stack_dump.hpp"
#include "subprocess.hpp"

namespace trainctl::commands {

namespace {

// What the nodes' helpers printed (stack_dump.hpp, dump_job_stacks_here).
struct probe_output {
  std::vector<rank_stack> stacks;
  std::vector<std::string> errors, other, notes;
};

probe_output read_probe_output(const std::string& output) {
  probe_output o;
  std::vector<rank_stack>& stacks = o.stacks;
  std::vector<std::string>&errors = o.errors, &other = o.other, &notes = o.notes;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    if (line.compare(0, 5, "note ") == 0) {  // a squatted evidence directory: where they went instead
      if (std::find(notes.begin(), notes.end(), line.substr(5)) == notes.end()) notes.push_back(line.substr(5));
      continue;
    }
    if (line.compare(0, 6, "error ") == 0) errors.push_back(line.substr(6));
    // After its rank's stack line: the program's frame and the flight recorder's digest.
    const bool caller = line.compare(0, 12, "caller rank=") == 0;
    if (caller || line.compare(0, 16, "collective rank=") == 0) {
      const char* rank = line.c_str() + (caller ? 12 : 16);
      const size_t space = line.find(' ', caller ? 12 : 16);
      if (stacks.empty() || space == std::string::npos || std::atoi(rank) != stacks.back().rank) continue;
      if (caller)
        stacks.back().caller = line.substr(space + 1);
      else
        stacks.back().collectives.push_back(line.substr(space + 1));
      continue;
    }
    if (line.compare(0, 11, "stack rank=") != 0) {
      if (line.compare(0, 6, "error ") != 0 && !line.empty()) other.push_back(line);
      continue;
    }
    rank_stack s;
    s.rank = std::atoi(line.c_str() + 11);
    s.host = scontrol_field(line, "host");
    const size_t f = line.find(" frame=");
    s.frame = f == std::string::npos ? "" : line.substr(f + 7);
    s.file = scontrol_field(line.substr(0, f), "dir");  // where that node wrote
    stacks.push_back(s);
  }
  return o;
}

}  // namespace

// trainctl stacks JOB: one task on each of the job's nodes (srun --overlap, beside the
// running steps) writes its ranks' stacks; the summary is made from what they print.
int dump_stacks_of_job(const std::string& who, const std::string& what, const std::string& job,
                       const std::string& log_dir, bool json) {
  using namespace trainctl;
  const auto info = running_job_of_mine(who, what, job);
  if (!info) return 1;
  const std::string& id = info->id;  // an array's id means its running task (job_access.hpp)
  // Given (--log-dir, TRAINCTL_LOG_DIR here): that. Else where the job's ranks put
  // theirs, which only the nodes can read, falling back to the job's working directory.
  std::string dir = log_dir.empty() ? env_text(env_var::kTrainctlLogDir) : log_dir;
  if (dir.empty()) dir = "fallback:" + info->work_dir;
  child_spec d;
  d.argv = srun_helper_on_each_node(*info, {"--dump-stacks-here", id, "--stacks-log-dir", dir});
  d.parent_death_signal = SIGTERM;  // srun ends the helper step with it
  d.deadline = std::chrono::milliseconds(180000);
  d.merge_stderr = true;  // srun's own refusals ("Access/permission denied") are the answer then
  const auto t0 = std::chrono::steady_clock::now();
  const child_result r = run_child(d);
  probe_output out = read_probe_output(r.output);
  std::vector<rank_stack>& stacks = out.stacks;
  const std::vector<std::string>&errors = out.errors, &other = out.other, &notes = out.notes;
  for (const auto& n : notes)
    std::fprintf(stderr, "%s: %s %s: %s\n", who.c_str(), what.c_str(), job.c_str(), n.c_str());
  for (const auto& e : errors)
    std::fprintf(stderr, "%s: %s %s: %s\n", who.c_str(), what.c_str(), job.c_str(), e.c_str());
  if (!r.ok() && stacks.empty()) {
    // srun's own line says why (permission denied, no such job step...); else ours.
    const std::string why = !other.empty() ? other.front() : errors.empty() ? r.error : "";
    if (!why.empty()) std::fprintf(stderr, "%s: %s %s: %s\n", who.c_str(), what.c_str(), job.c_str(), why.c_str());
    return 1;
  }
  std::sort(stacks.begin(), stacks.end(), [](const rank_stack& a, const rank_stack& b) { return a.rank < b.rank; });
  const long long ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  if (stacks.empty() && !errors.empty()) return 1;
  if (stacks.empty()) {
    std::fprintf(stderr, "%s: %s %s: no rank processes found on its nodes (%lld ms)\n", who.c_str(), what.c_str(),
                 job.c_str(), ms);
    return 1;
  }
  if (json) {
    nlohmann::json j;
    j["schema"] = 1;
    j["job"] = id;
    j["dir"] = stacks[0].file;
    j["took_ms"] = ms;
    j["summary"] = summarize(stacks);
    j["collectives"] = collective_verdict(stacks);  // "" where no rank uses torch.distributed
    j["ranks"] = nlohmann::json::array();
    for (const auto& s : stacks)
      j["ranks"].push_back(
          {{"rank", s.rank}, {"host", s.host}, {"dir", s.file}, {"frame", s.frame}, {"collectives", s.collectives}});
    j["errors"] = errors;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("%s: stacks of %zu ranks of job %s in %s/ (%lld ms): %s\n", who.c_str(), stacks.size(), id.c_str(),
                stacks[0].file.c_str(), ms, with_collectives(summarize(stacks), stacks).c_str());
  }
  return errors.empty() ? 0 : 1;
}

}  // namespace trainctl::commands
