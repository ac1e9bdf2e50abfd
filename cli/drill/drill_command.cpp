// trainctl drill SCRIPT [sbatch options]: submits the user's own script as a short
// two-task array and rehearses, in order, a save switch, a hang of one rank, the graceful
// exit's notice, the resume in task 2 and a rank killed there; then prints what should
// have happened, what did and how long it took, and keeps the figures where
// --graceful-exit=auto and --hang-timeout=auto read them. Runs on a login node as the
// user; what it watches is rank 0's run events (the per-user store on the shared home)
// and the job's record; what it injects goes through srun --overlap to the job's nodes.
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bad_nodes.hpp"
#include "batch_script.hpp"
#include "cluster_config.hpp"
#include "commands.hpp"
#include "drill_isolation.hpp"
#include "drill_reaper.hpp"
#include "drill_rehearsal.hpp"
#include "drill_report.hpp"
#include "job_access.hpp"
#include "options.hpp"
#include "owned_fd.hpp"
#include "parse.hpp"
#include "run_events.hpp"
#include "save_times.hpp"
#include "slurm_job.hpp"
#include "subprocess.hpp"
#include "user_paths.hpp"

namespace trainctl::commands {
namespace {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::string dur(std::int64_t ms) { return drill_duration(ms); }

}  // namespace

int drill_batch_script(const std::string& who, const std::string& path, const std::vector<std::string>& sbatch_args,
                       bool keep, bool json, std::chrono::milliseconds start_timeout) {
  // -- what the script runs under, as lint reads it --------------------------------------
  std::string why;
  const std::string text = read_script_file(path, &why);
  if (text.empty()) {
    std::fprintf(stderr, "%s drill: %s\n", who.c_str(), why.c_str());
    return 2;
  }
  char cwd[4096];
  std::string submit_dir = getcwd(cwd, sizeof cwd) != nullptr ? cwd : ".";
  drill_setup s;
  s.script = path;
  s.start_timeout = start_timeout;
  std::map<std::string, std::string> overrides;  // what the drill exports to the job
  const env_lookup env = [&](const char* name) -> std::string {
    if (std::strcmp(name, "SLURM_SUBMIT_DIR") == 0) return submit_dir;
    if (std::strcmp(name, "SLURM_JOB_NAME") == 0) return s.drill_name;
    const auto it = overrides.find(name);
    return it != overrides.end() ? it->second : env_text(name);
  };
  auto script = read_batch_script(text, path, sbatch_args, env, &why);
  if (!script) {
    std::fprintf(stderr, "%s drill: %s: %s\n", who.c_str(), path.c_str(), why.c_str());
    return 2;
  }
  s.name = job_name_of(*script, path);
  s.drill_name = s.name + "-drill";
  script_supervision sup = supervision_of(*script, env);
  if (sup.supervisor.empty()) {
    std::fprintf(stderr,
                 "%s drill: %s: it runs without trainctl, so there is nothing to rehearse; trainctl lint %s says what "
                 "to add\n",
                 who.c_str(), path.c_str(), path.c_str());
    return 1;
  }
  if (!sup.errors.empty()) {
    std::fprintf(stderr, "%s drill: %s:%d: %s\n", who.c_str(), path.c_str(), sup.errors.front().first,
                 sup.errors.front().second.c_str());
    return 2;
  }
  // -- apart from the real run: its checkpoints and switches must be the drill's own -------
  drill_identity id;
  id.real_name = s.name;
  id.drill_name = s.drill_name;
  id.submit_dir = submit_dir;
  const std::string probe = submit_dir + "/trainctl-drill-" + s.name.substr(0, 60) + "-probe";
  id.drill = {
      {"CKPT_DIR", probe + "/checkpoints"}, {"LOG_DIR", probe + "/logs"}, {"TRAINCTL_LOG_DIR", probe + "/logs"}};
  const std::string shared =
      shared_with_the_real_run(text, path, sbatch_args, id, [](const char* n) { return env_text(n); });
  if (!shared.empty()) {
    std::fprintf(stderr, "%s drill: %s\n", who.c_str(), shared.c_str());
    return 2;
  }
  std::string cluster_why;
  if (!read_cluster_facts(script->last("--partition") ? script->last("--partition")->value : "", milliseconds(20000),
                          &cluster_why)) {
    std::fprintf(stderr, "%s drill: %s: no cluster to drill on (%s); run it where sbatch works\n", who.c_str(),
                 path.c_str(), cluster_why.c_str());
    return 2;
  }

  // -- the drill's settings: the script's lead; a hang timeout short enough to wait for -----
  const bool plugin = sup.supervisor == "the SPANK plugin";
  s.lead_auto = sup.options.graceful_exit == option::kGracefulExitAuto;
  std::string store_why;
  const std::int64_t known_save = longest_recorded_save_ms(save_times_path_for_name(s.name), &store_why);
  s.lead_ms = s.lead_auto ? auto_graceful_exit(known_save, 0).graceful.count() : sup.options.graceful_exit.count();
  s.user_hang_ms = sup.options.hang.timeout.count();
  constexpr std::int64_t kDrillHang = 30000;
  if (s.user_hang_ms > 0 && s.user_hang_ms <= 2 * kDrillHang) {
    s.hang_ms = s.user_hang_ms;
  } else {
    // Shortened for the drill where the script lets it be (the plugin's option on sbatch's
    // command line; the template's HANG_TIMEOUT), and said in the table.
    if (plugin)
      s.sbatch.push_back("--hang-timeout=30s");
    else
      overrides["HANG_TIMEOUT"] = "30s";
  }
  if (plugin)
    s.sbatch.push_back("--hang-action=alert");
  else
    overrides["HANG_ACTION"] = "alert";
  // Two tasks, one after the other, under a name of their own (its switches, and the
  // template's checkpoints and logs, apart from the real run's).
  // Before the deadline: the start, the save switch (as long as the longest known save),
  // one hang timeout watched, and a hang found and resumed.
  const std::int64_t window_ms =
      std::max<std::int64_t>(90000, 2 * std::max(s.hang_ms, kDrillHang) + 45000) + known_save;
  const std::int64_t limit_s = (window_ms + std::max<std::int64_t>(s.lead_ms, 60000)) / 1000;
  char limit[32];
  std::snprintf(limit, sizeof limit, "%lld:%02lld", static_cast<long long>(limit_s / 60),
                static_cast<long long>(limit_s % 60));
  for (const std::string& o :
       {std::string("--array=1-2%1"), "--time=" + std::string(limit), "--job-name=" + s.drill_name})
    s.sbatch.push_back(o);
  std::vector<std::string> all = sbatch_args;
  all.insert(all.end(), s.sbatch.begin(), s.sbatch.end());
  script = read_batch_script(text, path, all, env, &why);
  if (!script) {  // the drill's own options cannot make a readable script unreadable
    std::fprintf(stderr, "%s drill: %s: %s\n", who.c_str(), path.c_str(), why.c_str());
    return 2;
  }
  sup = supervision_of(*script, env);
  if (s.hang_ms == 0) {
    if (sup.options.hang.timeout.count() > 0 && sup.options.hang.timeout.count() <= 2 * kDrillHang) {
      s.hang_ms = sup.options.hang.timeout.count();
      s.hang_note = s.user_hang_ms != 0 ? " (the drill's " + dur(s.hang_ms) + " for your " +
                                              (s.user_hang_ms > 0 ? dur(s.user_hang_ms) : std::string("auto")) + ")"
                                        : " (the drill's " + dur(s.hang_ms) + "; the script has none)";
    } else {
      s.hang_note = "--hang-timeout is " +
                    (s.user_hang_ms == 0  ? std::string("off")
                     : s.user_hang_ms > 0 ? dur(s.user_hang_ms)
                                          : "auto") +
                    " and written into the script, too long to wait for";
    }
  }
  s.hang_alert = sup.options.hang.action == hang_action::alert;
  s.opts = sup.options;

  // -- submit: two tasks, one after the other, apart from the user's checkpoints -----------
  std::string tmpl = submit_dir + "/trainctl-drill-" + s.name.substr(0, 60) + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "%s drill: cannot make a directory in %s: %s\n", who.c_str(), submit_dir.c_str(),
                 std::strerror(errno));
    return 1;
  }
  s.dir = tmpl;
  overrides["CKPT_DIR"] = s.dir + "/checkpoints";
  overrides["LOG_DIR"] = s.dir + "/logs";
  overrides["TRAINCTL_LOG_DIR"] = s.dir + "/logs";
  mkdir((s.dir + "/logs").c_str(), 0700);
  for (const auto& [name, value] : overrides) setenv(name.c_str(), value.c_str(), 1);
  child_spec submit;
  submit.argv = {"sbatch", "--parsable"};
  submit.argv.insert(submit.argv.end(), all.begin(), all.end());
  submit.argv.push_back("--output=" + s.dir + "/%x-%A_%a.out");
  submit.argv.push_back(path);
  submit.merge_stderr = true;
  submit.deadline = milliseconds(60000);
  // SIGHUP too (the terminal closed); SIGKILL is the reaper's.
  catch_drill_interrupts();
  drill_reaper reaper(s.drill_name, std::to_string(getuid()));
  reaper.submitting();
  const std::int64_t submitted_ms = unix_ms_now();  // the drill array's events come after
  const child_result r = run_child(submit);
  const std::string array = r.output.substr(0, r.output.find_first_of(";\n"));
  if (r.finished && (!r.ok() || !all_digits(array, 12))) reaper.done();  // refused: nothing queued
  if (!r.ok() || !all_digits(array, 12)) {
    std::fprintf(stderr, "%s drill: sbatch refused the drill: %s\n", who.c_str(),
                 r.output.empty() ? r.error.c_str() : r.output.substr(0, r.output.find('\n')).c_str());
    rmdir((s.dir + "/logs").c_str());
    rmdir(s.dir.c_str());
    return 1;
  }
  reaper.array_is(array);
  if (!json)
    std::printf("%s drill: array %s (%s, 2 tasks, %s each), drill files in %s\n", who.c_str(), array.c_str(),
                s.drill_name.c_str(), dur(limit_s * 1000).c_str(), s.dir.c_str());
  std::fflush(stdout);
  const auto began = clock_type::now();
  std::vector<drill_row> rows;
  drill_figures f;
  f.lead_ms = s.lead_ms;
  f.lead_auto = s.lead_auto;
  f.hang_timeout_ms = s.user_hang_ms;
  std::string kept_why;
  bool kept_any = false;
  {
    const drill_job job(array);
    event_watch w(array);
    std::string job1;
    rehearse_task_one(s, job, w, rows, f, job1);
    const bool task_one_ran = std::none_of(rows.begin(), rows.end(), [](const drill_row& r) {
      return r.event == "start-up" && r.how == drill_row::kProblem;
    });
    if (task_one_ran && !f.false_hang && g_drill_interrupted == 0) {
      rehearse_task_two(w, job1, rows, f);
    } else {
      // What follows would only repeat the first problem: said as not rehearsed.
      const std::string why =
          !task_one_ran ? "not rehearsed: no rank reached check()" : "not rehearsed: the loop's own hang came first";
      for (const char* event : {"save switch", "hang", "notice", "resume", "rank killed"})
        if (std::none_of(rows.begin(), rows.end(), [&](const drill_row& r) { return r.event == event; }))
          rows.push_back({event, "", why, -1, drill_row::kSkipped});
    }
    // What the supervisors measured in the drill's array: the real run starts from it.
    const auto measured = longest_recorded_phases(save_times_path(array), &store_why);
    // The longest quiet time of a training rank includes the rank the drill stopped: kept
    // only when it is shorter than that stop (a quiet time of the loop's own).
    std::map<std::string, std::int64_t> kept;
    for (const auto& [phase, ms] : measured) {
      if (phase == kQuietPhase && s.hang_ms > 0 && ms >= s.hang_ms) continue;
      kept[phase] = ms;
      if (phase == kQuietPhase)
        f.longest_quiet_ms = ms;
      else if (phase == "save")
        f.longest_save_ms = std::max(f.longest_save_ms, ms);
      else
        f.phases[phase] = ms;
    }
    const std::string keep_in = save_times_path_for_name(s.name);
    if (!keep_in.empty() && g_drill_interrupted == 0) {
      if (f.longest_save_ms > 0) kept_why = record_save_time(keep_in, array, "-", f.longest_save_ms);
      for (const auto& [phase, ms] : kept)
        if (phase != "save" && kept_why.empty()) kept_why = record_phase_time(keep_in, array, "-", phase, ms);
      kept_any = kept_why.empty() && (f.longest_save_ms > 0 || !kept.empty());
    }
    // The drill's own findings (the node of the stopped rank) are no node's fault.
    std::size_t removed = 0;
    std::set<std::string> jobs = drill_task_jobs(array, w.read(), submitted_ms);
    if (!job1.empty()) jobs.insert(job1);
    forget_findings(
        bad_nodes_path(), [&](const bad_node& b) { return jobs.count(b.job) != 0; }, &removed);
  }
  reaper.done();  // the drill_job above cancelled the array
  const double took = std::chrono::duration<double>(clock_type::now() - began).count();
  const bool clean = drill_clean(f, rows) && g_drill_interrupted == 0;
  const std::vector<std::string> verdict = drill_verdict(f, rows);
  if (json) {
    nlohmann::json doc = {{"schema", 1},       {"script", path}, {"array", array},
                          {"seconds", took},   {"clean", clean}, {"rows", nlohmann::json::array()},
                          {"verdict", verdict}};
    for (const drill_row& row : rows)
      doc["rows"].push_back({{"event", row.event},
                             {"expected", row.expected},
                             {"happened", row.happened},
                             {"seconds", row.seconds},
                             {"status", row.how == drill_row::kOk        ? "ok"
                                        : row.how == drill_row::kProblem ? "fail"
                                                                         : "skipped"}});
    std::printf("%s\n", doc.dump(2).c_str());
  } else {
    std::fputs(drill_table(rows).c_str(), stdout);
    std::printf("\n");
    for (const std::string& line : verdict) std::printf("%s\n", line.c_str());
    std::printf("the drill took %.0f s", took);
    if (kept_any)
      std::printf(
          "; what it measured is kept for --graceful-exit=auto, the hang budgets and trainctl lint of jobs "
          "named %s",
          s.name.c_str());
    else if (!kept_why.empty())
      std::printf("; what it measured could not be kept: %s", kept_why.c_str());
    std::printf("\n");
  }
  if (g_drill_interrupted != 0) {
    std::fprintf(stderr, "%s drill: interrupted; array %s cancelled, its files kept in %s\n", who.c_str(),
                 array.c_str(), s.dir.c_str());
    return 1;
  }
  if (keep || !clean) {
    std::fprintf(stderr, "%s drill: the drill's checkpoints, logs and stacks are in %s\n", who.c_str(), s.dir.c_str());
  } else {
    child_spec rm;
    rm.argv = {"rm", "-rf", "--", s.dir};
    (void)run_child(rm);
  }
  return clean ? 0 : 1;
}

}  // namespace trainctl::commands
