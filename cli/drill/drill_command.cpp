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

// What the drill knows before it submits, read in steps: the script as lint reads it,
// what it runs under, and the drill's own settings. `env` reads the drill's exports first.
struct drill_plan {
  std::string who, path, text, submit_dir;
  std::vector<std::string> sbatch_args, all;  // the user's options; with the drill's after them
  drill_setup s;
  std::map<std::string, std::string> overrides;  // what the drill exports to the job
  std::optional<batch_script> script;
  script_supervision sup;
  std::int64_t known_save = 0, limit_s = 0;
  std::string store_why;
  env_lookup env = [this](const char* name) -> std::string {
    if (std::strcmp(name, "SLURM_SUBMIT_DIR") == 0) return submit_dir;
    if (std::strcmp(name, "SLURM_JOB_NAME") == 0) return s.drill_name;
    const auto it = overrides.find(name);
    return it != overrides.end() ? it->second : env_text(name);
  };
  drill_plan() = default;
  drill_plan(const drill_plan&) = delete;  // env points into this one
  drill_plan& operator=(const drill_plan&) = delete;
};

// What the script runs under, as lint reads it; 0, or the drill's exit status.
int read_the_script(drill_plan& p) {
  std::string why;
  p.text = read_script_file(p.path, &why);
  if (p.text.empty()) {
    std::fprintf(stderr, "%s drill: %s\n", p.who.c_str(), why.c_str());
    return 2;
  }
  char cwd[4096];
  p.submit_dir = getcwd(cwd, sizeof cwd) != nullptr ? cwd : ".";
  p.script = read_batch_script(p.text, p.path, p.sbatch_args, p.env, &why);
  if (!p.script) {
    std::fprintf(stderr, "%s drill: %s: %s\n", p.who.c_str(), p.path.c_str(), why.c_str());
    return 2;
  }
  p.s.name = job_name_of(*p.script, p.path);
  p.s.drill_name = p.s.name + "-drill";
  p.sup = supervision_of(*p.script, p.env);
  if (p.sup.supervisor.empty()) {
    std::fprintf(stderr,
                 "%s drill: %s: it runs without trainctl, so there is nothing to rehearse; trainctl lint %s says what "
                 "to add\n",
                 p.who.c_str(), p.path.c_str(), p.path.c_str());
    return 1;
  }
  if (!p.sup.errors.empty()) {
    std::fprintf(stderr, "%s drill: %s:%d: %s\n", p.who.c_str(), p.path.c_str(), p.sup.errors.front().first,
                 p.sup.errors.front().second.c_str());
    return 2;
  }
  return 0;
}

// Apart from the real run: its checkpoints and switches must be the drill's own; and a
// cluster to drill on. 0, or the drill's exit status.
int check_apart_and_cluster(const drill_plan& p) {
  drill_identity id;
  id.real_name = p.s.name;
  id.drill_name = p.s.drill_name;
  id.submit_dir = p.submit_dir;
  const std::string probe = p.submit_dir + "/trainctl-drill-" + p.s.name.substr(0, 60) + "-probe";
  id.drill = {
      {"CKPT_DIR", probe + "/checkpoints"}, {"LOG_DIR", probe + "/logs"}, {"TRAINCTL_LOG_DIR", probe + "/logs"}};
  const std::string shared =
      shared_with_the_real_run(p.text, p.path, p.sbatch_args, id, [](const char* n) { return env_text(n); });
  if (!shared.empty()) {
    std::fprintf(stderr, "%s drill: %s\n", p.who.c_str(), shared.c_str());
    return 2;
  }
  std::string cluster_why;
  const auto partition = p.script->last("--partition");
  if (!read_cluster_facts(partition ? partition->value : "", milliseconds(20000), &cluster_why)) {
    std::fprintf(stderr, "%s drill: %s: no cluster to drill on (%s); run it where sbatch works\n", p.who.c_str(),
                 p.path.c_str(), cluster_why.c_str());
    return 2;
  }
  return 0;
}

constexpr std::int64_t kDrillHang = 30000;

// The hang timeout the drill's tasks run with, when the script's own was too long to
// wait for (or none), and how it differs, for the table.
void take_the_drills_hang(drill_setup& s, std::int64_t script_hang_ms) {
  if (script_hang_ms > 0 && script_hang_ms <= 2 * kDrillHang) {
    s.hang_ms = script_hang_ms;
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

// The drill's settings: the script's lead; a hang timeout short enough to wait for, and
// the time limit that holds them. 0, or the drill's exit status.
int choose_settings(drill_plan& p) {
  drill_setup& s = p.s;
  const bool plugin = p.sup.supervisor == "the SPANK plugin";
  s.lead_auto = p.sup.options.graceful_exit == option::kGracefulExitAuto;
  p.known_save = longest_recorded_save_ms(save_times_path_for_name(s.name), &p.store_why);
  s.lead_ms = s.lead_auto ? auto_graceful_exit(p.known_save, 0).graceful.count() : p.sup.options.graceful_exit.count();
  s.user_hang_ms = p.sup.options.hang.timeout.count();
  if (s.user_hang_ms > 0 && s.user_hang_ms <= 2 * kDrillHang) {
    s.hang_ms = s.user_hang_ms;
  } else {
    // Shortened for the drill where the script lets it be (the plugin's option on sbatch's
    // command line; the template's HANG_TIMEOUT), and said in the table.
    if (plugin)
      s.sbatch.push_back("--hang-timeout=30s");
    else
      p.overrides["HANG_TIMEOUT"] = "30s";
  }
  if (plugin)
    s.sbatch.push_back("--hang-action=alert");
  else
    p.overrides["HANG_ACTION"] = "alert";
  // Two tasks, one after the other, under a name of their own (its switches, and the
  // template's checkpoints and logs, apart from the real run's).
  // Before the deadline: the start, the save switch (as long as the longest known save),
  // one hang timeout watched, and a hang found and resumed.
  const std::int64_t window_ms =
      std::max<std::int64_t>(90000, 2 * std::max(s.hang_ms, kDrillHang) + 45000) + p.known_save;
  p.limit_s = (window_ms + std::max<std::int64_t>(s.lead_ms, 60000)) / 1000;
  char limit[32];
  std::snprintf(limit, sizeof limit, "%lld:%02lld", static_cast<long long>(p.limit_s / 60),
                static_cast<long long>(p.limit_s % 60));
  for (const std::string& o :
       {std::string("--array=1-2%1"), "--time=" + std::string(limit), "--job-name=" + s.drill_name})
    s.sbatch.push_back(o);
  p.all = p.sbatch_args;
  p.all.insert(p.all.end(), s.sbatch.begin(), s.sbatch.end());
  std::string why;
  p.script = read_batch_script(p.text, p.path, p.all, p.env, &why);
  if (!p.script) {  // the drill's own options cannot make a readable script unreadable
    std::fprintf(stderr, "%s drill: %s: %s\n", p.who.c_str(), p.path.c_str(), why.c_str());
    return 2;
  }
  p.sup = supervision_of(*p.script, p.env);
  if (s.hang_ms == 0) take_the_drills_hang(s, p.sup.options.hang.timeout.count());
  s.hang_alert = p.sup.options.hang.action == hang_action::alert;
  s.opts = p.sup.options;
  return 0;
}

// The drill's own directory, apart from the user's checkpoints, and what the drill
// exports to its tasks; false when it cannot be made (said in one line).
bool make_the_drills_dir(drill_plan& p) {
  drill_setup& s = p.s;
  std::string tmpl = p.submit_dir + "/trainctl-drill-" + s.name.substr(0, 60) + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    std::fprintf(stderr, "%s drill: cannot make a directory in %s: %s\n", p.who.c_str(), p.submit_dir.c_str(),
                 std::strerror(errno));
    return false;
  }
  s.dir = tmpl;
  p.overrides["CKPT_DIR"] = s.dir + "/checkpoints";
  p.overrides["LOG_DIR"] = s.dir + "/logs";
  p.overrides["TRAINCTL_LOG_DIR"] = s.dir + "/logs";
  mkdir((s.dir + "/logs").c_str(), 0700);
  for (const auto& [name, value] : p.overrides) setenv(name.c_str(), value.c_str(), 1);
  return true;
}

// Submits the two tasks, one after the other: the array's id, or "" when nothing was
// queued (said in one line).
std::string submit_the_drill(drill_plan& p, drill_reaper& reaper) {
  const drill_setup& s = p.s;
  child_spec submit;
  submit.argv = {"sbatch", "--parsable"};
  submit.argv.insert(submit.argv.end(), p.all.begin(), p.all.end());
  submit.argv.push_back("--output=" + s.dir + "/%x-%A_%a.out");
  submit.argv.push_back(p.path);
  submit.merge_stderr = true;
  submit.deadline = milliseconds(60000);
  reaper.submitting();
  const child_result r = run_child(submit);
  std::string array = r.output.substr(0, r.output.find_first_of(";\n"));
  if (r.finished && (!r.ok() || !all_digits(array, 12))) reaper.done();  // refused: nothing queued
  if (!r.ok() || !all_digits(array, 12)) {
    std::fprintf(stderr, "%s drill: sbatch refused the drill: %s\n", p.who.c_str(),
                 r.output.empty() ? r.error.c_str() : r.output.substr(0, r.output.find('\n')).c_str());
    rmdir((s.dir + "/logs").c_str());
    rmdir(s.dir.c_str());
    return "";
  }
  reaper.array_is(array);
  return array;
}

// Task 1's rehearsals, then task 2's, or rows saying why they were not rehearsed.
void rehearse(const drill_setup& s, event_watch& w, const drill_job& job, std::vector<drill_row>& rows,
              drill_figures& f, std::string& job1) {
  rehearse_task_one(s, job, w, rows, f, job1);
  const bool task_one_ran = std::none_of(rows.begin(), rows.end(), [](const drill_row& r) {
    return r.event == "start-up" && r.how == drill_row::kProblem;
  });
  if (task_one_ran && !f.false_hang && g_drill_interrupted == 0) {
    rehearse_task_two(w, job1, rows, f);
    return;
  }
  // What follows would only repeat the first problem: said as not rehearsed.
  const std::string why =
      !task_one_ran ? "not rehearsed: no rank reached check()" : "not rehearsed: the loop's own hang came first";
  for (const char* event : {"save switch", "hang", "notice", "resume", "rank killed"})
    if (std::none_of(rows.begin(), rows.end(), [&](const drill_row& r) { return r.event == event; }))
      rows.push_back({event, "", why, -1, drill_row::kSkipped});
}

// What the supervisors measured in the drill's array, kept where the real run starts
// from it: into `f`, and for jobs of the script's name. Sets *kept_why to what refused it.
bool keep_the_measures(const drill_setup& s, const std::string& array, drill_figures& f, std::string* kept_why) {
  std::string store_why;
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
  if (keep_in.empty() || g_drill_interrupted != 0) return false;
  if (f.longest_save_ms > 0) *kept_why = record_save_time(keep_in, array, "-", f.longest_save_ms);
  for (const auto& [phase, ms] : kept)
    if (phase != "save" && kept_why->empty()) *kept_why = record_phase_time(keep_in, array, "-", phase, ms);
  return kept_why->empty() && (f.longest_save_ms > 0 || !kept.empty());
}

// What the drill found: the table and the verdict, or the same as JSON.
void print_the_drill(const drill_plan& p, const std::string& array, const std::vector<drill_row>& rows,
                     const drill_figures& f, double took, bool clean, bool json, bool kept_any,
                     const std::string& kept_why) {
  const std::vector<std::string> verdict = drill_verdict(f, rows);
  if (json) {
    nlohmann::json doc = {{"schema", 1},       {"script", p.path}, {"array", array},
                          {"seconds", took},   {"clean", clean},   {"rows", nlohmann::json::array()},
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
    return;
  }
  std::fputs(drill_table(rows).c_str(), stdout);
  std::printf("\n");
  for (const std::string& line : verdict) std::printf("%s\n", line.c_str());
  std::printf("the drill took %.0f s", took);
  if (kept_any)
    std::printf(
        "; what it measured is kept for --graceful-exit=auto, the hang budgets and trainctl lint of jobs "
        "named %s",
        p.s.name.c_str());
  else if (!kept_why.empty())
    std::printf("; what it measured could not be kept: %s", kept_why.c_str());
  std::printf("\n");
}

}  // namespace

int drill_batch_script(const std::string& who, const std::string& path, const std::vector<std::string>& sbatch_args,
                       bool keep, bool json, std::chrono::milliseconds start_timeout) {
  drill_plan p;
  p.who = who;
  p.path = path;
  p.sbatch_args = sbatch_args;
  p.s.script = path;
  p.s.start_timeout = start_timeout;
  if (const int rc = read_the_script(p)) return rc;
  if (const int rc = check_apart_and_cluster(p)) return rc;
  if (const int rc = choose_settings(p)) return rc;
  if (!make_the_drills_dir(p)) return 1;
  // SIGHUP too (the terminal closed); SIGKILL is the reaper's.
  catch_drill_interrupts();
  drill_reaper reaper(p.s.drill_name, std::to_string(getuid()));
  const std::int64_t submitted_ms = unix_ms_now();  // the drill array's events come after
  const std::string array = submit_the_drill(p, reaper);
  if (array.empty()) return 1;
  if (!json)
    std::printf("%s drill: array %s (%s, 2 tasks, %s each), drill files in %s\n", who.c_str(), array.c_str(),
                p.s.drill_name.c_str(), dur(p.limit_s * 1000).c_str(), p.s.dir.c_str());
  std::fflush(stdout);
  const auto began = clock_type::now();
  std::vector<drill_row> rows;
  drill_figures f;
  f.lead_ms = p.s.lead_ms;
  f.lead_auto = p.s.lead_auto;
  f.hang_timeout_ms = p.s.user_hang_ms;
  std::string kept_why;
  bool kept_any = false;
  {
    const drill_job job(array);  // cancels the array when it goes
    // Ten seconds of allowance for the nodes' clocks; an older array of this id wrote long before.
    event_watch w(array, submitted_ms - 10000);
    std::string job1;
    rehearse(p.s, w, job, rows, f, job1);
    kept_any = keep_the_measures(p.s, array, f, &kept_why);
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
  print_the_drill(p, array, rows, f, took, clean, json, kept_any, kept_why);
  if (g_drill_interrupted != 0) {
    std::fprintf(stderr, "%s drill: interrupted; array %s cancelled, its files kept in %s\n", who.c_str(),
                 array.c_str(), p.s.dir.c_str());
    return 1;
  }
  if (keep || !clean) {
    std::fprintf(stderr, "%s drill: the drill's checkpoints, logs and stacks are in %s\n", who.c_str(),
                 p.s.dir.c_str());
  } else {
    child_spec rm;
    rm.argv = {"rm", "-rf", "--", p.s.dir};
    (void)run_child(rm);
  }
  return clean ? 0 : 1;
}

}  // namespace trainctl::commands
