// trainctl lint SCRIPT [sbatch options]: reads the batch script, asks the cluster how it
// preempts and limits time, reads what earlier runs of the script (jobs of this user with
// its job name) measured, and prints one line per problem. Runs on a login node as the
// user; it submits nothing and writes nothing.
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "batch_script.hpp"
#include "cluster_config.hpp"
#include "commands.hpp"
#include "job_environment.hpp"
#include "job_history.hpp"
#include "lint_rules.hpp"
#include "owned_fd.hpp"
#include "parse.hpp"
#include "process_group_timeout.hpp"
#include "run_event_kinds.hpp"
#include "run_events.hpp"
#include "save_times.hpp"

namespace trainctl::commands {
namespace {

constexpr int kHistoryDays = 90;

// What this user's earlier jobs named `name` measured: their save and phase times and
// each task's start-up (its start to rank 0's first step). *said: where it came from.
run_figures earlier_runs(const std::string& name, std::string* said) {
  run_figures f;
  const passwd* me = getpwuid(getuid());
  if (me == nullptr) {
    *said = "no user name for uid " + std::to_string(getuid()) + ": earlier runs not read";
    return f;
  }
  // What a drill of this job name measured (trainctl drill): as an earlier run's.
  std::string drill_why;
  const auto drilled = longest_recorded_phases(save_times_path_for_name(name), &drill_why);
  const auto take = [&f](const std::map<std::string, std::int64_t>& phases) {
    for (const auto& [phase, ms] : phases) {
      std::int64_t& into = phase == "save"        ? f.longest_save_ms
                           : phase == kQuietPhase ? f.longest_quiet_ms
                                                  : f.phases[phase];
      into = std::max(into, ms);
    }
  };
  take(drilled);
  std::string why;
  const std::vector<task_record> tasks = tasks_named(me->pw_name, name, kHistoryDays, &why);
  if (tasks.empty()) {
    *said = why + (drilled.empty() ? "" : "; a drill's figures read");
    return f;
  }
  std::map<std::string, std::int64_t> start_of;  // raw job id -> its start
  std::set<std::string> keys;
  for (const task_record& t : tasks) {
    start_of[t.job_id] = t.start_ms;
    keys.insert(t.name.substr(0, t.name.find('_')));
  }
  for (const std::string& key : keys) {
    std::string store_why;
    const auto phases = longest_recorded_phases(save_times_path(key), &store_why);
    const std::vector<run_event> events = read_run_events(run_events_path(key), &store_why);
    if (phases.empty() && events.empty()) continue;
    f.arrays.push_back(key);
    take(phases);
    for (const run_event& e : events) {
      // A save's length to its commit (an asynchronous one's write included), else to its blocking end.
      if ((e.what == run_event_kind::kSaved || e.what == run_event_kind::kCommit) && e.took_ms > f.longest_save_ms)
        f.longest_save_ms = e.took_ms;
      const auto start = start_of.find(e.job);
      if (e.what == run_event_kind::kFirstStep && start != start_of.end() && start->second > 0 && e.ms > start->second)
        f.longest_start_ms = std::max(f.longest_start_ms, e.ms - start->second);
    }
  }
  *said = std::to_string(f.arrays.size()) + " earlier job" + (f.arrays.size() == 1 ? "" : "s") + " named " + name +
          " with trainctl's figures";
  if (f.longest_save_ms > 0)
    *said += ", the longest save " + format_duration(std::chrono::milliseconds(f.longest_save_ms));
  if (f.arrays.empty()) *said = "no earlier run of " + name + " with trainctl's figures";
  if (!drilled.empty()) *said += "; a drill's figures read";
  return f;
}

std::string where(const std::string& script, int line) {
  return line > 0 ? script + ":" + std::to_string(line) : script;
}

// --export as sbatch's command line gives it (the script's own #SBATCH --export is read
// with the script, after the lookups this serves); nullopt when not given.
std::optional<std::string> export_of(const std::vector<std::string>& sbatch_args) {
  std::optional<std::string> value;
  for (std::size_t i = 0; i < sbatch_args.size(); ++i) {
    if (sbatch_args[i].rfind("--export=", 0) == 0)
      value = sbatch_args[i].substr(9);
    else if (sbatch_args[i] == "--export" && i + 1 < sbatch_args.size())
      value = sbatch_args[++i];
  }
  return value;
}

void print_lint_json(const std::string& path, const std::string& job_name, const lint_result& r,
                     const std::string& partition, const std::string& preempt, const run_figures& measured) {
  nlohmann::json doc = {{"schema", 1},
                        {"script", path},
                        {"job_name", job_name},
                        {"supervisor", r.supervisor},
                        {"partition", partition},
                        {"preemption", preempt},
                        {"earlier_runs", measured.arrays},
                        {"measured",
                         {{"longest_save_ms", measured.longest_save_ms},
                          {"longest_quiet_ms", measured.longest_quiet_ms},
                          {"longest_start_ms", measured.longest_start_ms},
                          {"phases", measured.phases}}},
                        {"problems", nlohmann::json::array()},
                        {"notes", r.notes}};
  for (const lint_problem& p : r.problems)
    doc["problems"].push_back({{"rule", p.rule}, {"line", p.line}, {"text", p.text}});
  std::printf("%s\n", doc.dump(2).c_str());
}

void print_lint_text(const std::string& path, const lint_result& r, const std::string& partition,
                     const std::string& preempt, const std::string& history) {
  for (const lint_problem& p : r.problems)
    std::printf("%s: %s [%s]\n", where(path, p.line).c_str(), p.text.c_str(), p.rule.c_str());
  for (const std::string& n : r.notes) std::printf("%s: note: %s\n", path.c_str(), n.c_str());
  const std::string n = std::to_string(r.problems.size());
  std::printf(
      "%s: %s (%s; partition %s, %s; %s)\n", path.c_str(),
      r.problems.empty() ? "no problem found" : (n + (r.problems.size() == 1 ? " problem" : " problems")).c_str(),
      r.supervisor.empty() ? "not under trainctl" : ("supervised by " + r.supervisor).c_str(), partition.c_str(),
      preempt.c_str(), history.c_str());
}

}  // namespace

int lint_batch_script(const std::string& who, const std::string& path, const std::vector<std::string>& sbatch_args,
                      std::int64_t collective_timeout_ms, bool json) {
  std::string why;
  const std::string text = read_script_file(path, &why);
  if (text.empty()) {
    std::fprintf(stderr, "%s lint: %s\n", who.c_str(), why.c_str());
    return 2;
  }
  char cwd[4096];
  std::string submit_dir = getcwd(cwd, sizeof cwd) != nullptr ? cwd : ".";
  std::string job_name;
  const std::optional<std::string> export_value = export_of(sbatch_args);
  const job_environment job_env(export_value ? &*export_value : nullptr, [](const char* n) { return env_text(n); });
  const env_lookup env = [&](const char* name) -> std::string {
    if (std::strcmp(name, "SLURM_SUBMIT_DIR") == 0) return submit_dir;
    if (std::strcmp(name, "SLURM_JOB_NAME") == 0) return job_name;
    return job_env(name);
  };
  const auto script = read_batch_script(text, path, sbatch_args, env, &why);
  if (!script) {
    std::fprintf(stderr, "%s lint: %s: %s\n", who.c_str(), path.c_str(), why.c_str());
    return 2;
  }
  job_name = job_name_of(*script, path);
  const script_option* partition = script->last("--partition");
  bool no_partition = false;
  const auto cluster =
      read_cluster_facts(partition != nullptr ? partition->value : "", std::chrono::seconds(20), &why, &no_partition);
  if (!cluster && no_partition) {
    std::fprintf(stderr, "%s lint: %s: %s\n", who.c_str(),
                 where(path, partition != nullptr ? partition->line : 0).c_str(), why.c_str());
    return 2;
  }
  if (!cluster) {
    std::fprintf(stderr, "%s lint: %s: no cluster to check it against (%s); run lint where sbatch works\n", who.c_str(),
                 path.c_str(), why.c_str());
    return 2;
  }
  lint_context ctx;
  ctx.script = path;
  ctx.cluster = cluster;
  std::string history;
  ctx.measured = earlier_runs(job_name, &history);
  ctx.collective_timeout_ms = collective_timeout_ms;
  if (collective_timeout_ms <= 0) read_program_timeouts(*script, submit_dir, &ctx);
  ctx.env = env;
  const lint_result r = lint_script(*script, ctx);

  const std::string preempt = !cluster->preempts() ? "no preemption"
                                                   : "PreemptMode=" + (cluster->partition.preempt_mode.empty()
                                                                           ? cluster->preempt_mode
                                                                           : cluster->partition.preempt_mode);
  if (json)
    print_lint_json(path, job_name, r, cluster->partition.name, preempt, ctx.measured);
  else
    print_lint_text(path, r, cluster->partition.name, preempt, history);
  return r.problems.empty() ? 0 : 1;
}

}  // namespace trainctl::commands
