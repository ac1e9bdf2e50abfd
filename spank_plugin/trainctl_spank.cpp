// trainctl's SPANK plugin: the supervisor's options that run_option_table offers to
// srun, sbatch and salloc (--graceful-exit, --kill-switch, --save-switch, ...), and
// every task run under the trainctl supervisor (trainctl-run). Thin on purpose: options, validation, site defaults,
// environment, starting the supervisor; the supervisor does the rest.
//
// Contexts: option callbacks run in srun/sbatch/salloc (remote=0: validate and refuse)
// and in slurmstepd (remote=1: record). slurm_spank_user_init runs in slurmstepd with
// the user's privileges; slurm_spank_task_init runs in the task process as the user,
// before it execs the user's command.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

// spank.h declares the slurm_spank_* callbacks before it opens its own extern "C".
extern "C" {
#include <slurm/spank.h>
}

#ifndef SLURM_BATCH_SCRIPT  // slurm.h's value, the same from 20.11 to 25.x
#define SLURM_BATCH_SCRIPT 0xfffffffb
#endif
// From 23.11 a plugin can put the supervisor in front of the task's argv; before
// that (22.05 here) the task has to fork, see slurm_spank_task_init.
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
#define TRAINCTL_HAVE_PREPEND_ARGV 1
#endif

#include "build_id.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "metrics_files.hpp"
#include "node_state.hpp"
#include "options.hpp"
#include "parse.hpp"
#include "run_id.hpp"
#include "run_option_table.hpp"
#include "spank_args.hpp"
#include "state_dir.hpp"
#include "supervised_step.hpp"
#include "switch_paths.hpp"
#include "user_paths.hpp"

// This build, in the file itself: `trainctl version` reads it there, without loading the plugin.
extern "C" __attribute__((used)) const char trainctl_plugin_build[] = TRAINCTL_PLUGIN_BUILD_MARKER TRAINCTL_BUILD_TEXT;

// spank.h's SPANK_PLUGIN defines const objects; in C++ they need extern "C" linkage
// declared first, or they would be internal and the plugin loader would not find them.
// The build hides every symbol by default; these are what the loader looks up (the
// version script trainctl_spank.map is the second guard).
#define TRAINCTL_SPANK_EXPORT __attribute__((visibility("default")))

extern "C" {
TRAINCTL_SPANK_EXPORT extern const char plugin_name[];
TRAINCTL_SPANK_EXPORT extern const char plugin_type[];
TRAINCTL_SPANK_EXPORT extern const unsigned int plugin_version;
TRAINCTL_SPANK_EXPORT extern const unsigned int spank_plugin_version;
SPANK_PLUGIN(trainctl, 1)
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
// From 25.05 a required plugin whose slurm_spank_init fails drains the node unless it
// says otherwise. A job-side tool that cannot start must fail the job, never take a node
// out of service for everyone: read by slurmstepd when it loads the plugin.
TRAINCTL_SPANK_EXPORT int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
#endif
}

#ifndef TRAINCTL_RUN_PATH
#define TRAINCTL_RUN_PATH "/usr/local/bin/trainctl-run"
#endif

namespace {

using trainctl::parse_error;

// One process holds one copy: srun/sbatch, or one slurmstepd.
struct state {
  trainctl::site_settings site;
  // The plugin's options (the rows of run_option_table it offers), as given and as
  // parsed by the same rows the supervisor parses them with.
  std::vector<trainctl::given_option> given;
  trainctl::supervisor_options opts;
  int run_dir_hold = -1;  // the task's shared lock on the user's run directory (make_run_dir)
} g;

// `val` is the row's index in run_option_table, plus one.
int option_cb(int val, const char* optarg, int remote) {
  const auto& table = trainctl::run_option_table();
  if (val < 1 || static_cast<std::size_t>(val) > table.size()) return -1;
  const trainctl::run_option& row = table[val - 1];
  std::string value = optarg != nullptr ? optarg : "";
  // An option given without its optional value reaches the steps of a batch script
  // through SLURM_SPANK_OPTION_... as the text "(null)" (22.05): that is no value.
  if (value == "(null)") value.clear();
  try {
    trainctl::apply_run_option(row, g.opts, value);
    if (std::strcmp(row.name, "--graceful-signal") == 0) trainctl::check_graceful_signal(value, g.site);
  } catch (const parse_error& e) {
    // remote == 0: srun/sbatch/salloc print this and submit nothing.
    slurm_error("trainctl: %s", e.what());
    return -1;
  }
  for (auto& o : g.given)
    if (o.row == &row) o.value = value;
  if (!trainctl::is_given(g.given, row.name)) g.given.push_back({&row, value});
  (void)remote;
  return 0;
}

// The rows the plugin offers, with "trainctl: " + their help (plugin_option_docs', from
// which trainctl_spank(8) is made too) and the site's defaults; alive as long as the plugin.
std::vector<spank_option>& plugin_options() {
  static std::vector<spank_option> options;
  static std::vector<std::string> usage;
  if (!options.empty()) return options;
  const auto docs = trainctl::plugin_option_docs(g.site.default_signal);
  usage.reserve(docs.size());
  for (const auto& d : docs) usage.push_back("trainctl: " + d.help);
  const auto& table = trainctl::run_option_table();
  for (std::size_t i = 0; i < table.size(); ++i)
    for (std::size_t d = 0; d < docs.size(); ++d)
      if (std::strcmp(table[i].bare(), docs[d].name) == 0)
        options.push_back({const_cast<char*>(docs[d].name), const_cast<char*>(docs[d].value), &usage[d][0],
                           table[i].metavar == nullptr ? 0
                           : table[i].value_optional() ? 2
                                                       : 1,
                           static_cast<int>(i + 1), option_cb});
  return options;
}

// Whether this task runs under the supervisor: any option given, but those that only
// change how a supervised task is watched, and those given as "none".
bool active() {
  if (g.site.always || g.site.default_graceful_exit.count() > 0) return true;
  for (const auto& o : g.given) {
    const std::string name = o.row->name;
    if (name == "--hang-action" || name == "--hang-phase-timeout") continue;
    if (name == "--on-notice" && g.opts.on_notice.empty()) continue;
    if (name == "--hang-timeout" && g.opts.hang.timeout.count() == 0) continue;
    return true;
  }
  return false;
}

std::string job_env(spank_t sp, const char* name) {
  char buf[4096];
  if (spank_getenv(sp, name, buf, sizeof buf) != ESPANK_SUCCESS) return "";
  return buf;
}

// The switch paths, filled in from the defaults where the option had no value.
void resolve_switches(spank_t sp) {
  const std::string submit = job_env(sp, trainctl::env_var::kSlurmSubmitDir),
                    name = job_env(sp, trainctl::env_var::kSlurmJobName);
  if (trainctl::is_given(g.given, "--kill-switch") && g.opts.kill_switch.empty())
    g.opts.kill_switch = trainctl::default_switch_path("kill-switch", submit, name);
  if (trainctl::is_given(g.given, "--save-switch") && g.opts.save_switch.empty())
    g.opts.save_switch = trainctl::default_switch_path("save-switch", submit, name);
}

// The per-user node state directory, /run/trainctl/<uid> (0700, the user's), under a
// root-owned /run/trainctl that nobody else can write: another user can neither
// squat the name (as with /dev/shm/trainctl-<uid>) nor swap it. As root, in the task
// before it drops privileges; never follows a link. The task keeps a shared lock on it
// (inherited by the supervisor, held for its life): the job epilog removes the
// directory only when it can lock it alone, so never between this and the
// supervisor's first file. "" or why not.
std::string make_run_dir(uid_t uid, gid_t gid) {
  const char* parent = trainctl::kRunParent;
  struct stat st {};
  // slurmstepd's umask would make it 0750, which keeps the users out of their own.
  if (mkdir(parent, 0755) == 0) chmod(parent, 0755);
  if (lstat(parent, &st) != 0) return std::string("mkdir ") + parent + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) != 0)
    return std::string(parent) + " is not a root-owned directory that only root can write";
  if ((st.st_mode & 0755) != 0755) chmod(parent, (st.st_mode & 07777) | 0755);
  const std::string dir = std::string(parent) + "/" + std::to_string(uid);
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (mkdir(dir.c_str(), 0700) == 0) {
      if (chown(dir.c_str(), uid, gid) != 0) return "chown " + dir + ": " + std::strerror(errno);
    } else if (errno != EEXIST) {
      return "mkdir " + dir + ": " + std::strerror(errno);
    }
    // Not O_CLOEXEC: the supervisor this task becomes holds the lock.
    const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_uid != uid || (st.st_mode & 077) != 0) {
      if (fd >= 0) close(fd);
      return dir + " exists and is not the user's private directory";
    }
    if (trainctl::hold_dir_shared(fd, dir, st)) {
      g.run_dir_hold = fd;
      return "";
    }
    close(fd);  // the epilog removed it meanwhile: make it again
  }
  return dir + " kept being removed while it was made";
}

// In slurmd, as root: sweep_stale_state(dir, min_age_s, job, unused) in a child that is
// the user (uid, their primary group `gid`), waited for. "" or why it could not run.
std::string sweep_as_user(uid_t uid, gid_t gid, const std::string& dir, int min_age_s, const std::string& job,
                          bool unused) {
  const pid_t child = fork();
  if (child == 0) {
    if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0 || getuid() != uid) _exit(1);
    trainctl::sweep_stale_state(dir, min_age_s, job, unused);
    _exit(0);
  }
  if (child < 0) return std::string("fork: ") + std::strerror(errno);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "could not sweep " + dir + " as uid " + std::to_string(uid);
  return "";
}

gid_t primary_gid(uid_t uid, gid_t fallback) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  char buf[4096];
  return getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found != nullptr ? pw.pw_gid : fallback;
}

// In slurmd, as root, when a job has ended on this node: the user's /run/trainctl/<uid>
// goes when no task of theirs holds it (their last job here ended). As the user, the
// files no process has open are removed, and every job's claims (a job that ended while
// another of the user's held the directory could not remove its own); as root, the
// directory, if that left it empty. "" or what went wrong.
std::string remove_run_dir(uid_t uid, const std::string& job) {
  const std::string dir = std::string(trainctl::kRunParent) + "/" + std::to_string(uid);
  struct stat st {};
  if (lstat(trainctl::kRunParent, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022) != 0)
    return "";  // not the plugin's parent: nothing of the plugin's to clean
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return "";
  if (fstat(fd, &st) != 0 || st.st_uid != uid || flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);  // another user's, or a task of this user's still holds it
    return "";
  }
  std::string why = sweep_as_user(uid, primary_gid(uid, st.st_gid), dir, 0, job, true);
  if (rmdir(dir.c_str()) != 0 && errno != ENOTEMPTY && errno != EEXIST && why.empty())
    why = "rmdir " + dir + ": " + std::strerror(errno);
  close(fd);
  return why;
}

// In slurmd, as root, when a job has ended on this node: a job that used none of the
// plugin's options kept its node state (its ranks' own, without a supervisor) in the
// user's /dev/shm/trainctl-<uid>; ranks killed there (a crash of every rank of the
// node) left it. As the user, that job's files no process has open go. The directory
// itself stays (the name is the user's; another job may be about to use it).
std::string sweep_shm_dir(uid_t uid, const std::string& job) {
  if (job.empty()) return "";
  const std::string dir = "/dev/shm/trainctl-" + std::to_string(uid);
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid) return "";
  // The ended job's files at once (its processes are gone), others' after a minute.
  return sweep_as_user(uid, primary_gid(uid, st.st_gid), dir, 60, job, false);
}

// What the supervisor sets for the processes it starts, for the command the task
// starts on 22.05 (which the supervisor does not start): the node state, the log
// directory, the bad-node memory. Computed from the job's environment exactly as the
// supervisor computes them, and passed to it (--state) so that both agree.
struct rank_env {
  std::string state, log_dir, bad_nodes;
};
rank_env env_for_ranks(spank_t sp, bool batch) {
  rank_env e;
  uid_t uid = 0;
  spank_get_item(sp, S_JOB_UID, &uid);
  uint32_t job = 0, step = 0;
  spank_get_item(sp, S_JOB_ID, &job);
  spank_get_item(sp, S_JOB_STEPID, &step);
  const std::string dir =
      trainctl::trusted_state_dir(uid, job_env(sp, trainctl::env_var::kXdgRuntimeDir), trainctl::kRunParent).path;
  std::string node = job_env(sp, trainctl::env_var::kSlurmdNodename);
  if (node.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    node = host;
  }
  if (!dir.empty())
    e.state = dir + "/" + trainctl::step_state_name(std::to_string(job), batch ? "batch" : std::to_string(step), node);
  const auto env = [sp](const char* name) { return job_env(sp, name); };
  e.log_dir = trainctl::job_log_dir(env);
  e.bad_nodes = trainctl::bad_nodes_path(env);
  return e;
}

// Where a plugstack.conf argument came from: "FILE:LINE" of the first line that loads
// this plugin with it, looked up in the usual places; "" when not found.
std::string argument_origin(const std::string& arg) {
  std::vector<std::string> files;
  std::string dir = trainctl::env_or(trainctl::env_var::kSlurmConf, "/etc/slurm/slurm.conf");
  dir = dir.substr(0, dir.rfind('/'));
  files.push_back(dir + "/plugstack.conf");
  if (DIR* d = opendir((dir + "/plugstack.conf.d").c_str())) {
    while (dirent* e = readdir(d))
      if (std::strstr(e->d_name, ".conf") != nullptr) files.push_back(dir + "/plugstack.conf.d/" + e->d_name);
    closedir(d);
  }
  for (const auto& f : files) {
    std::ifstream in(f);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n)
      if (line.find("trainctl") != std::string::npos && line.find(arg) != std::string::npos &&
          line.find_first_not_of(" \t") != std::string::npos && line[line.find_first_not_of(" \t")] != '#')
        return f + ":" + std::to_string(n);
  }
  return "";
}

// In the batch script's task, before it becomes the script: the run id its supervisor
// decides (run_identity.hpp), one line on `fd`; "" when none came within 5 s.
std::string wait_for_run_id(int fd) {
  std::string got;
  char buf[80];
  pollfd p{fd, POLLIN, 0};
  while (got.size() < sizeof buf && got.find('\n') == std::string::npos && poll(&p, 1, 5000) > 0) {
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  got = got.substr(0, got.find('\n'));
  return trainctl::valid_run_id(got) ? got : "";
}

#ifndef TRAINCTL_HAVE_PREPEND_ARGV
// The forked child of slurm_spank_task_init: it goes back to slurmstepd, which execs the
// user's command in it, with the notice signals ignored, the supervisor's death as a
// notice, and the variables its ranks read (the run id the batch supervisor decides).
int become_the_command(spank_t sp, pid_t supervisor, const int id_socket[2], const rank_env& renv,
                       const std::function<std::string(const char*)>& task_env) {
  // slurmstepd leaves SIGCHLD (and what else it blocked) blocked in the task, and
  // the command would inherit that mask: a launcher waiting for its workers with
  // SIGCHLD blocked misses them.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (g.run_dir_hold >= 0) close(g.run_dir_hold);  // the supervisor holds it, not the command
  if (g.site.shield) {
    for (int sig : trainctl::option::kDefaultShield) signal(sig, SIG_IGN);
    signal(g.opts.graceful_signal, SIG_IGN);
  }
  // The supervisor's death (OOM killer, kill -9) reaches the command as a notice, and
  // its ranks know whom to watch and to allow as ptracer (the supervisor sets these
  // itself only for commands it starts).
  prctl(PR_SET_PDEATHSIG, g.opts.graceful_signal);
  if (getppid() != supervisor) raise(g.opts.graceful_signal);
  char pid[24];
  std::snprintf(pid, sizeof pid, "%d", static_cast<int>(supervisor));
  spank_setenv(sp, "TRAINCTL_SUPERVISOR_PID", pid, 1);
  const std::string step = trainctl::supervised_step(task_env);
  spank_setenv(sp, trainctl::kSupervisedVar, step.c_str(), 1);
  std::string run;
  if (id_socket[0] >= 0) {
    close(id_socket[1]);
    run = wait_for_run_id(id_socket[0]);
    close(id_socket[0]);
  }
  if (run.empty()) run = trainctl::run_id(task_env);
  if (!run.empty()) spank_setenv(sp, trainctl::kRunIdVar, run.c_str(), 1);
  if (!renv.state.empty()) spank_setenv(sp, "TRAINCTL_STATE", renv.state.c_str(), 1);
  if (!renv.log_dir.empty()) spank_setenv(sp, "TRAINCTL_LOG_DIR", renv.log_dir.c_str(), 1);
  if (!renv.bad_nodes.empty()) spank_setenv(sp, "TRAINCTL_BAD_NODES", renv.bad_nodes.c_str(), 1);
  return 0;  // slurmstepd goes on and execs the user's command here
}
#endif

}  // namespace

extern "C" {

// All contexts, as root in slurmstepd: parse site arguments, register the options.
TRAINCTL_SPANK_EXPORT int slurm_spank_init(spank_t sp, int ac, char** av) {
  g.site.supervisor = TRAINCTL_RUN_PATH;
  g.site.default_signal = trainctl::option::kGracefulSignalDefault;
  for (int i = 0; i < ac; ++i) {
    try {
      trainctl::apply_site_argument(g.site, av[i]);
    } catch (const parse_error& e) {
      const std::string where = argument_origin(av[i]);
      slurm_error("trainctl: %s argument '%s' ignored: %s", where.empty() ? "plugstack.conf" : where.c_str(), av[i],
                  e.what());
    }
  }
  g.opts.graceful_signal = g.site.default_signal;
  g.opts.graceful_exit = g.site.default_graceful_exit;
  if (!g.site.default_hang_timeout.empty())  // checked when read; a user's --hang-timeout replaces it
    trainctl::apply_run_option(trainctl::run_option_named("--hang-timeout"), g.opts, g.site.default_hang_timeout);
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 5, 0)
  // In slurmstepd, a supervisor that cannot be run fails the job here, and the failure
  // mode above keeps the node in service. Before 25.05 a failure here drains the node,
  // so there the task's own start fails instead.
  if (spank_remote(sp) != 0 && access(g.site.supervisor.c_str(), X_OK) != 0) {
    slurm_error(
        "trainctl: the supervisor %s cannot be run (%s): failing the job; accepted: supervisor= an "
        "executable trainctl-run in plugstack.conf",
        g.site.supervisor.c_str(), std::strerror(errno));
    return -1;
  }
#endif
  for (spank_option& o : plugin_options()) {
    if (spank_option_register(sp, &o) != ESPANK_SUCCESS) {
      slurm_error("trainctl: cannot register --%s", o.name);
      return -1;
    }
  }
  return 0;
}

// slurmstepd, user privileges: export the switch paths into the job's environment
// (the batch script and every task), whatever --export said.
TRAINCTL_SPANK_EXPORT int slurm_spank_user_init(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (!active()) return 0;
  resolve_switches(sp);
  if (!g.opts.kill_switch.empty()) spank_setenv(sp, "KILL_SWITCH", g.opts.kill_switch.c_str(), 1);
  if (!g.opts.save_switch.empty()) spank_setenv(sp, "SAVE_SWITCH", g.opts.save_switch.c_str(), 1);
  spank_setenv(sp, trainctl::kPluginBuildVar, TRAINCTL_BUILD_TEXT, 1);  // trainctl version names it in a job
  return 0;
}

// In the task process, as root, before it drops privileges: the user's node state
// directory. A failure costs nothing but that directory (the supervisor falls back).
TRAINCTL_SPANK_EXPORT int slurm_spank_task_init_privileged(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (!active()) return 0;
  uid_t uid = 0;
  gid_t gid = 0;
  if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS || spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS)
    return 0;
  const std::string why = make_run_dir(uid, gid);
  if (!why.empty()) slurm_info("trainctl: no node state directory under %s: %s", trainctl::kRunParent, why.c_str());
  return 0;
}

// In slurmd, as root, once the job has ended on this node (every job, options or not).
TRAINCTL_SPANK_EXPORT int slurm_spank_job_epilog(spank_t sp, int ac, char** av) {
  uid_t uid = 0;
  uint32_t job = 0;
  if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS) return 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS) job = 0;
  const std::string id = job != 0 ? std::to_string(job) : "";
  std::string why = remove_run_dir(uid, id);
  if (!why.empty()) slurm_info("trainctl: the node state directory of uid %u stays: %s", uid, why.c_str());
  why = sweep_shm_dir(uid, id);
  if (!why.empty()) slurm_info("trainctl: job %s's node state in /dev/shm stays: %s", id.c_str(), why.c_str());
  // What a task killed outright left in the site's metrics_dir (its supervisor removes
  // its own file as the task ends); the arguments as slurm_spank_init read them, which
  // said any bad one.
  trainctl::site_settings site;
  for (int i = 0; i < ac; ++i) {
    try {
      trainctl::apply_site_argument(site, av[i]);
    } catch (const parse_error&) {  // slurm_spank_init said it
      continue;
    }
  }
  if (!site.metrics_dir.empty() && !id.empty()) {
    why = trainctl::remove_job_metrics(site.metrics_dir, id);
    if (!why.empty()) slurm_info("trainctl: job %s's metrics files stay: %s", id.c_str(), why.c_str());
  }
  return 0;
}

// In the task process, as the user, before slurmstepd execs the user's command. On
// 22.05 there is no way to change the task's argv, so the task forks: the child goes
// on to become the user's command (with the notice signals ignored), and this
// process, the one slurmstepd signals and waits for, becomes the supervisor.
TRAINCTL_SPANK_EXPORT int slurm_spank_task_init(spank_t sp, int ac, char** av) {
  (void)ac;
  (void)av;
  if (!active()) return 0;
  resolve_switches(sp);
  const std::string why = trainctl::untrusted_supervisor(g.site.supervisor);
  if (!why.empty()) {
    slurm_error("trainctl: the supervisor %s %s: not running it; the task runs unsupervised", g.site.supervisor.c_str(),
                why.c_str());
    return 0;
  }
  uint32_t step = 0;
  spank_get_item(sp, S_JOB_STEPID, &step);
  const bool batch = step == SLURM_BATCH_SCRIPT;

  const rank_env renv = env_for_ranks(sp, batch);
  std::vector<std::string> args = trainctl::supervisor_argv(g.site, g.opts, g.given, batch, renv.state);

#ifdef TRAINCTL_HAVE_PREPEND_ARGV
  // The supervisor starts the command itself: argv becomes trainctl-run OPTIONS -- argv.
  args.push_back("--");
  std::vector<const char*> pre;
  for (auto& a : args) pre.push_back(a.c_str());
  if (spank_prepend_task_argv(sp, static_cast<int>(pre.size()), pre.data()) != ESPANK_SUCCESS)
    slurm_error("trainctl: cannot put the supervisor in front of the task; it runs unsupervised");
  return 0;
#else
  char** env = nullptr;
  if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS) env = environ;
  const auto task_env = [env](const char* name) {
    const std::size_t n = std::strlen(name);
    for (char** e = env; e != nullptr && *e != nullptr; ++e)
      if (std::strncmp(*e, name, n) == 0 && (*e)[n] == '=') return std::string(*e + n + 1);
    return std::string();
  };
  // The batch script waits for the run id its supervisor decides; the job's steps inherit it.
  // A socket pair: the supervisor's late answer to a script that stopped waiting is an
  // error it can ignore (MSG_NOSIGNAL), never a SIGPIPE that ends it.
  int id_socket[2] = {-1, -1};
  if (batch && !trainctl::valid_run_id(task_env(trainctl::kRunIdVar)) &&
      socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, id_socket) != 0)
    id_socket[0] = id_socket[1] = -1;

  const pid_t supervisor = getpid();  // this process becomes the supervisor
  const pid_t child = fork();
  if (child < 0) {
    slurm_error("trainctl: fork failed (%s); the task runs without the supervisor", std::strerror(errno));
    for (int fd : id_socket)
      if (fd >= 0) close(fd);
    return 0;
  }
  if (child == 0) return become_the_command(sp, supervisor, id_socket, renv, task_env);
  args.insert(args.begin() + 1, std::string(trainctl::kAdoptFlag) + "=" + std::to_string(child));
  if (id_socket[1] >= 0) {
    close(id_socket[0]);
    fcntl(id_socket[1], F_SETFD, 0);  // the supervisor writes it
    args.insert(args.begin() + 2, std::string(trainctl::kRunIdFdFlag) + "=" + std::to_string(id_socket[1]));
  }
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (auto& a : args) argv.push_back(&a[0]);
  argv.push_back(nullptr);
  execve(argv[0], argv.data(), env);
  // Never return into slurmstepd's path from here: the task would run twice.
  slurm_error("trainctl: cannot run the supervisor %s (%s); the task runs unsupervised", argv[0], std::strerror(errno));
  if (id_socket[1] >= 0) close(id_socket[1]);  // the task waits no longer
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
#endif
}

}  // extern "C"
