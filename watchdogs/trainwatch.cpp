// trainwatch: watchdog checks for training runs, alerting by email, Slack and webhooks.
// Exit status follows the monitoring-plugins convention: 0 OK, 1 WARNING, 2 CRITICAL,
// 3 UNKNOWN ("could not tell" is UNKNOWN, never OK and never a false alarm).
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "alerting.hpp"
#include "bad_nodes.hpp"
#include "checks.hpp"
#include "cli_text.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "parse.hpp"
#include "subprocess.hpp"
#include "trainctl/trainctl.h"
#include "trainwatch_config.hpp"
#include "trainwatch_options.hpp"

namespace {

using namespace trainctl;

// What the command line itself says for `option` (--opt V and --opt=V), as opposed
// to what a --config file adds.
std::vector<std::string> argv_values(int argc, char** argv, const std::string& option) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == option && i + 1 < argc)
      out.push_back(argv[++i]);
    else if (a.compare(0, option.size() + 1, option + "=") == 0)
      out.push_back(a.substr(option.size() + 1));
    else if (a == "--")
      break;
  }
  return out;
}

int report(const std::vector<check_result>& results, const alert_setup& setup) {
  for (const auto& r : results) {
    std::string name = r.check;
    for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    std::printf("%s %s - %s", name.c_str(), status_name(r.status), r.text.c_str());
    if (!r.figures.empty()) {
      std::printf(" |");
      for (const auto& [k, v] : r.figures) std::printf(" %s=%.15g", k.c_str(), v);
    }
    std::printf("\n");
  }
  std::fflush(stdout);
  try {
    handle_results(results, setup);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trainwatch: alerting failed: %s\n", e.what());
  }
  return worst_status(results);
}

std::chrono::milliseconds seconds_option(const std::string& option, const std::string& value, char bare = 's') {
  return parsed(option, value, [bare](const std::string& v) { return parse_duration(v, bare); });
}

// One struct per subcommand: add() registers its options, run() checks and reports.
struct job_running_command {
  CLI::App* cmd = nullptr;
  std::vector<std::string> names;
  std::string user, timeout = "30s";

  void add(CLI::App& app) {
    cmd = app.add_subcommand("job-running", "OK while a job of exactly that name is running or pending");
    cmd->add_option("--job-name", names, "the job name (repeatable; spaces and long names work)")->required();
    cmd->add_option("--user", user, "whose jobs (default: you)");
    cmd->add_option("--timeout", timeout, "give up on the controller after this long (default 30s)");
  }
  int run(const alert_setup& setup) {
    if (user.empty()) {
      user = env_set(env_var::kUser) ? env_text(env_var::kUser) : std::to_string(getuid());
    }
    return report(check_job_running(names, user, seconds_option("--timeout", timeout)), setup);
  }
};

// Stragglers the ranks reported (slow_nodes in the job's log directory).
struct slow_nodes_command {
  CLI::App* cmd = nullptr;
  std::string path, max_age = "1h";

  void add(CLI::App& app) {
    cmd = app.add_subcommand("slow-nodes", "WARNING while a straggler rank was reported lately (LOG_DIR/slow_nodes)");
    cmd->add_option("--path", path, "the slow_nodes file, e.g. logs/train/slow_nodes")->required();
    cmd->add_option("--max-age", max_age, "reports older than this are over (default 1h)");
  }
  int run(const alert_setup& setup) const {
    return report({check_slow_nodes(path, seconds_option("--max-age", max_age), std::time(nullptr))}, setup);
  }
};

// A running job back on a node remembered as bad (the memory `trainctl bad-nodes` reads).
struct bad_nodes_command {
  CLI::App* cmd = nullptr;
  std::string name, expiry = "24h", file, timeout = "30s";

  void add(CLI::App& app) {
    cmd =
        app.add_subcommand("job-on-bad-node", "WARNING when a running job of that name is on a node remembered as bad");
    cmd->alias("bad-nodes");  // its old name, which read like `trainctl bad-nodes` (the list): one release
    cmd->add_option("--job-name", name, "the job name")->required();
    cmd->add_option("--expiry", expiry, "forget a bad node after this long (default 24h)");
    cmd->add_option("--file", file, "the memory (default $TRAINCTL_BAD_NODES, else ~/.local/state/trainctl/bad_nodes)");
    cmd->add_option("--timeout", timeout, "give up on the controller after this long (default 30s)");
  }
  int run(const alert_setup& setup) {
    if (file.empty()) file = bad_nodes_path();
    const std::string u = env_set(env_var::kUser) ? env_text(env_var::kUser) : std::to_string(getuid());
    child_spec q;
    q.argv = {"squeue", "-h", "-u", u, "-t", "RUNNING", "-n", name, "-o", "%N"};
    q.deadline = seconds_option("--timeout", timeout);
    const child_result r = run_child(q);
    std::vector<std::string> nodes;
    if (r.ok() && !r.output.empty()) {
      child_spec h;
      h.argv = {"scontrol", "show", "hostnames", r.output.substr(0, r.output.find_last_not_of("\n ") + 1)};
      h.deadline = q.deadline;
      const child_result hosts = run_child(h);
      std::istringstream lines(hosts.output);
      for (std::string line; std::getline(lines, line);)
        if (!line.empty()) nodes.push_back(line);
    }
    if (!r.ok()) {
      check_result u_r;
      u_r.check = "job-on-bad-node";
      u_r.target = name;
      u_r.status = kUnknown;
      u_r.text = "cannot ask the controller: " + r.error;
      return report({u_r}, setup);
    }
    const auto days = std::chrono::duration_cast<std::chrono::seconds>(seconds_option("--expiry", expiry, 'h'));
    return report({check_bad_node_back(name, nodes, file, days, std::time(nullptr))}, setup);
  }
};

struct log_stall_command {
  CLI::App* cmd = nullptr;
  log_stall_options lo;
  std::string max_age = "30m", save_max_age = "2h", on_stall, stacks_of;
  bool follow = false;

  void add(CLI::App& app) {
    cmd = app.add_subcommand("log-stall", "CRITICAL when the newest write among the logs is too old");
    cmd->add_option("--path", lo.patterns, "log files or glob patterns (repeatable), e.g. 'logs/rank*.log'")
        ->required();
    cmd->add_option("--max-age", max_age, "how old the newest write may be (default 30m)");
    cmd->add_option("--save-marker", lo.save_marker, "while this file exists a save is in progress ...");
    cmd->add_option("--save-max-age", save_max_age, "... and this longer limit applies (default 2h)");
    cmd->add_flag("--follow", follow, "keep watching (inotify), alert the moment the limit passes");
    cmd->add_option("--on-stall", on_stall, "with --follow: run this shell command when a stall begins");
    cmd->add_option("--stacks-of", stacks_of,
                    "when a stall begins, take every rank's stacks of this running job (trainctl stacks JOB) "
                    "and say in the alert where the ranks are stuck");
  }
  int run(const alert_setup& setup) {
    lo.max_age = seconds_option("--max-age", max_age);
    lo.save_max_age = seconds_option("--save-max-age", save_max_age);
    if (!stacks_of.empty() && stacks_of.find_first_not_of("0123456789_") != std::string::npos)
      usage_error("--stacks-of: '" + stacks_of + "'; accepted: a job id such as 12345 or 12345_7");
    if (!follow) return report({with_stacks(check_log_stall(lo), setup)}, setup);
    run_follow(setup);
  }

  // Once per stall, also from cron: a dump is due when none was taken since the logs'
  // last write (the time of the last dump is kept in the state directory).
  check_result with_stacks(check_result r, const alert_setup& setup) const {
    if (stacks_of.empty() || r.status != kCritical) return r;
    double age = 0;
    for (const auto& [k, v] : r.figures)
      if (k == "age_seconds") age = v;
    const std::string stamp = setup.state_dir + "/stacks-" + stacks_of;
    const std::time_t now = std::time(nullptr), stall_began = now - static_cast<std::time_t>(age);
    struct stat st {};
    if (stat(stamp.c_str(), &st) == 0 && st.st_mtime >= stall_began) return r;
    std::ofstream(stamp).flush();
    child_spec d;
    d.argv = {"trainctl", "stacks", stacks_of};
    d.deadline = std::chrono::milliseconds(200000);
    const child_result out = run_child(d);
    std::string line = out.output.substr(0, out.output.find('\n'));
    const std::string prefix = "trainctl: ";
    if (line.compare(0, prefix.size(), prefix) == 0) line = line.substr(prefix.size());
    r.text += "; " + (out.ok() && !line.empty() ? line : "no stacks of job " + stacks_of + ": " + out.error);
    return r;
  }

  // --follow: wake on writes in the logs' directories or when the limit would pass.
  [[noreturn]] void run_follow(const alert_setup& setup) const {
    const int fd = inotify_init1(IN_CLOEXEC);
    for (const auto& p : lo.patterns) {
      const size_t slash = p.rfind('/');
      const std::string dir = slash == std::string::npos ? "." : p.substr(0, slash == 0 ? 1 : slash);
      if (fd >= 0) inotify_add_watch(fd, dir.c_str(), IN_MODIFY | IN_CREATE | IN_CLOSE_WRITE | IN_MOVED_TO);
    }
    bool stalled = false;
    while (true) {
      const check_result plain = check_log_stall(lo);
      const bool now_stalled = plain.status == kCritical;
      const check_result r = now_stalled && !stalled ? with_stacks(plain, setup) : plain;
      if (now_stalled != stalled || r.status == kUnknown) report({r}, setup);
      if (now_stalled && !stalled && !on_stall.empty()) {
        const int rc = std::system(on_stall.c_str());
        std::fprintf(stderr, "trainwatch: --on-stall finished with status %d\n", rc);
      }
      stalled = now_stalled;
      double age = lo.max_age.count();
      for (const auto& [k, v] : r.figures)
        if (k == "age_seconds") age = v * 1000;
      const double limit = static_cast<double>(lo.max_age.count());
      int wait_ms = stalled ? 60000 : static_cast<int>(std::max(50.0, limit - age + 50));
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, fd >= 0 ? 1 : 0, std::min(wait_ms, 60000)) > 0) {
        char buf[4096];
        while (read(fd, buf, sizeof buf) > 0) {
          pollfd q{fd, POLLIN, 0};
          if (poll(&q, 1, 0) <= 0) break;
        }
      }
    }
  }
};

struct fs_command {
  CLI::App* cmd = nullptr;
  std::vector<std::string> args;  // CLI11 only checks the names: the order is read from the words

  void add(CLI::App& app) {
    cmd = app.add_subcommand("fs", "free space and inodes of each --path, each with its own thresholds");
    cmd->add_option(
           "--path,--min-free,--warn-free,--min-free-inodes,--warn-free-inodes,--capacity,--quota-command,--timeout",
           args, "")
        ->group("");
    cmd->footer(
        "Options apply to the --path before them (also in a --config's [fs] section, one per line):\n"
        "  --path PATH                 a filesystem to check (repeatable)\n"
        "  --min-free SIZE|PCT         CRITICAL below this (2T, 10%)\n"
        "  --warn-free SIZE|PCT        WARNING below this\n"
        "  --min-free-inodes N|PCT     CRITICAL below this many free inodes (1M, 5%)\n"
        "  --warn-free-inodes N|PCT    WARNING below this\n"
        "  --capacity FACTOR           effective capacity factor, e.g. 0.8 when 80% is full\n"
        "  --quota-command COMMAND     a quota command whose figures also count (lfs quota -q -u $USER /scratch)\n"
        "  --timeout DURATION          give up on this path after this long (default 5s): UNKNOWN, the others still "
        "checked");
  }

  // The targets from `words` (the config's [fs] lines, then the command line): each
  // option belongs to the --path before it.
  static std::vector<fs_target> targets(const std::vector<std::string>& words) {
    std::vector<fs_target> out;
    for (size_t i = 0; i < words.size(); ++i) {
      std::string a = words[i], v;
      const size_t eq = a.find('=');
      if (a == "--") break;
      if (a.compare(0, 2, "--") != 0) continue;
      if (eq != std::string::npos) {
        v = a.substr(eq + 1);
        a = a.substr(0, eq);
      } else if (i + 1 < words.size()) {
        v = words[i + 1];
      }
      if (a == "--path") {
        out.push_back(fs_target{});
        out.back().path = v;
        continue;
      }
      const bool per_path = a == "--min-free" || a == "--warn-free" || a == "--min-free-inodes" ||
                            a == "--warn-free-inodes" || a == "--capacity" || a == "--quota-command" ||
                            a == "--timeout";
      if (!per_path) continue;
      if (out.empty()) usage_error(a + " must follow the --path it applies to");
      auto& t = out.back();
      if (a == "--min-free")
        t.min_free = parsed(a, v, parse_threshold);
      else if (a == "--warn-free")
        t.warn_free = parsed(a, v, parse_threshold);
      else if (a == "--min-free-inodes")
        t.min_free_inodes = parsed(a, v, parse_threshold);
      else if (a == "--warn-free-inodes")
        t.warn_free_inodes = parsed(a, v, parse_threshold);
      else if (a == "--timeout")
        t.timeout = seconds_option(a, v);
      else if (a == "--quota-command")
        t.quota_command = v;
      else if (a == "--capacity") {
        char* end = nullptr;
        t.capacity = std::strtod(v.c_str(), &end);
        if (end == v.c_str() || *end != '\0' || !(t.capacity > 0 && t.capacity <= 1))
          usage_error("--capacity: '" + v + "' is not a factor; accepted: more than 0 and at most 1, e.g. 0.8");
      }
    }
    if (out.empty()) usage_error("fs: no --path given");
    return out;
  }
  int run(const alert_setup& setup, const std::vector<std::string>& words) const {
    return report(check_fs(targets(words), setup.state_dir), setup);
  }
};

struct memory_command {
  CLI::App* cmd = nullptr;
  std::string min = "5%", warn = "10%", root, leak = "24h", job, timeout = "60s";
  bool here = false;

  void add(CLI::App& app) {
    cmd = app.add_subcommand("memory", "available memory of the node or the job's cgroup, and slow leaks");
    cmd->add_option("--min-available", min, "CRITICAL below this (default 5%)");
    cmd->add_option("--warn-available", warn, "WARNING below this (default 10%)");
    cmd->add_option("--leak-horizon", leak, "WARNING when the growth reaches the limit within this (default 24h)");
    cmd->add_option("--job", job,
                    "a running job of yours with this name: its memory on each of its nodes (srun --overlap), "
                    "not this process's");
    cmd->add_option("--timeout", timeout, "with --job: give up on SLURM after this long (default 60s)");
    cmd->add_option("--root", root, "read /proc and /sys below this directory (tests)")->group("");
    cmd->add_flag("--here", here, "the part of --job that runs on each of the job's nodes")->group("");
  }
  int run(const alert_setup& setup) const {
    memory_options mo;
    mo.min_available = parsed("--min-available", min, parse_threshold);
    mo.warn_available = parsed("--warn-available", warn, parse_threshold);
    mo.leak_horizon = std::chrono::duration_cast<std::chrono::hours>(seconds_option("--leak-horizon", leak, 'h'));
    mo.root = root;
    if (here) {                                        // one line for the --job side to judge; no alert from here
      const auto m = read_memory(root, "self", true);  // the job's cgroup, not this helper step's
      if (m) std::fputs(memory_here_line(*m).c_str(), stdout);
      return m ? 0 : kUnknown;
    }
    if (!job.empty()) return report(job_memory(mo, setup), setup);
    return report({check_memory(mo, setup.state_dir)}, setup);
  }

  // Each running job of this user named `job`: the helper on each of its nodes.
  std::vector<check_result> job_memory(const memory_options& mo, const alert_setup& setup) const {
    const auto limit = seconds_option("--timeout", timeout);
    auto unknown = [&](const std::string& why) {
      check_result r;
      r.check = "memory";
      r.target = job;
      r.status = kUnknown;
      r.text = why;
      return std::vector<check_result>{r};
    };
    const std::string u = env_set(env_var::kUser) ? env_text(env_var::kUser) : std::to_string(getuid());
    child_spec q;
    // %A: the job's own id, also for an array's task (%i would be ARRAY_TASK).
    q.argv = {"squeue", "-h", "-u", u, "-t", "RUNNING", "-n", job, "-o", "%A %D %N"};
    q.deadline = limit;
    const child_result jobs = run_child(q);
    if (!jobs.ok()) return unknown("cannot ask the controller: " + jobs.error);
    char self[4096] = {};
    const std::string me = readlink("/proc/self/exe", self, sizeof self - 1) > 0 ? self : "trainwatch";
    std::vector<check_result> out;
    std::istringstream lines(jobs.output);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream in(line);
      std::string id, count, nodes;
      if (!(in >> id >> count >> nodes) || !all_digits(id, 20) || !all_digits(count, 6) ||
          nodes.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,[]") !=
              std::string::npos)
        continue;
      child_spec h;
      h.argv = {"srun", "--jobid=" + id, "--overlap", "--quiet", "-N",    count, "--ntasks-per-node=1",
                "-w",   nodes,           me,          "memory",  "--here"};
      h.deadline = limit;
      const child_result here_out = run_child(h);
      for (auto& r : judge_job_memory(job, id, std::stoi(count), here_out.output, mo, setup.state_dir)) {
        if (r.status == kUnknown && !here_out.ok()) r.text += " (" + here_out.error + ")";
        out.push_back(std::move(r));
      }
    }
    if (out.empty()) {  // an answer, not a failure to tell: job-running is the check that wants one
      auto none = unknown("no running job of yours named " + job + ": nothing to measure");
      none[0].status = kOk;
      return none;
    }
    return out;
  }
};

// A result from a script (e.g. a cron chain that could not resubmit itself), sent
// through the same alert layer: deduplicated, repeated, resolved, spooled.
struct notify_command {
  CLI::App* cmd = nullptr;
  std::string check = "script", target, status, text;

  void add(CLI::App& app) {
    cmd = app.add_subcommand("notify", "alert with a result given on the command line");
    cmd->add_option("--check", check, "what kind of check (default script)");
    cmd->add_option("--target", target, "what it is about")->required();
    cmd->add_option("--status", status, "ok, warning, critical or unknown")->required();
    cmd->add_option("--text", text, "one line for a person")->required();
  }
  int run(const alert_setup& setup) const {
    check_result r;
    r.check = check;
    r.target = target;
    r.text = text;
    r.status = parse_status(status);
    if (r.status < 0) usage_error("--status: '" + status + "'; accepted: ok, warning, critical, unknown");
    return report({r}, setup);
  }
};

struct flush_command {
  CLI::App* cmd = nullptr;

  void add(CLI::App& app) {
    cmd = app.add_subcommand("flush",
                             "deliver alerts that earlier runs could not send, to the sinks configured now (give the "
                             "same --notify or --config as the checks)");
  }
  static int run(const alert_setup& setup) {
    const int left = flush_spool(setup);
    std::printf("FLUSH %s - %d alert%s still undelivered\n", left ? "WARNING" : "OK", left, left == 1 ? "" : "s");
    return left ? kWarning : kOk;
  }
};

// `trainwatch bad-nodes`, the old name of job-on-bad-node, is still run, and said so.
void say_when_old_name(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {  // which name came first on the command line
    const std::string word = argv[i];
    if (word == "job-on-bad-node") return;
    if (word == "bad-nodes") {
      std::fprintf(stderr,
                   "trainwatch: bad-nodes is now `trainwatch job-on-bad-node` (`trainctl bad-nodes` lists the "
                   "nodes); the old name goes in the next release\n");
      return;
    }
  }
}

// The config is read strictly before CLI11 reads it leniently: its fs targets' words, and
// one usage line for a wrong name or value.
std::vector<std::string> read_config_strictly(int argc, char** argv, CLI::App& app, common_options* common) {
  const auto configs = argv_values(argc, argv, "--config");
  if (configs.empty()) return {};
  common->config_file = configs.back();
  try {
    return check_config(common->config_file, app);
  } catch (const std::runtime_error& e) {
    usage_error(e.what());
  }
  return {};
}

int run_main(int argc, char** argv) {
  CLI::App app{
      "Watchdog checks for training runs on SLURM clusters, alerting by email, Slack and webhooks.\n"
      "Exit status: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.",
      "trainwatch"};
  app.set_version_flag("--version", "trainwatch " + std::to_string(TRAINCTL_VERSION_MAJOR) + "." +
                                        std::to_string(TRAINCTL_VERSION_MINOR) + "." +
                                        std::to_string(TRAINCTL_VERSION_PATCH));
  app.set_config("--config", "", "read options from this file (TOML or INI, the same names as the flags)");
  app.require_subcommand(1);
  // The alerting options belong to the app, so a config file states them once at its
  // top; fallthrough lets them stand after the subcommand on the command line too.
  app.fallthrough();
  common_options common;
  common.add_to(&app);
  job_running_command job;
  log_stall_command log;
  slow_nodes_command slow;
  bad_nodes_command bad;
  fs_command fs;
  memory_command mem;
  flush_command flush;
  notify_command notify;
  job.add(app);
  log.add(app);
  slow.add(app);
  bad.add(app);
  fs.add(app);
  mem.add(app);
  flush.add(app);
  notify.add(app);

  std::vector<std::string> fs_words = read_config_strictly(argc, argv, app, &common);
  common.notify_on_argv = argv_values(argc, argv, "--notify");
  name_values(app);
  try {
    app.allow_extras(false);
    app.allow_config_extras(CLI::config_extras_mode::error);
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string check = subcommand_hint(app, argc, argv, "a trainwatch command");
    usage_error(check.empty() ? refusal(app, e.what(), argc, argv) : check);
  }

  // Every option is checked before any check runs: bad input sends nothing.
  const alert_setup setup = common.setup();
  if (job.cmd->parsed()) return job.run(setup);
  if (log.cmd->parsed()) return log.run(setup);
  if (slow.cmd->parsed()) return slow.run(setup);
  if (bad.cmd->parsed()) {
    say_when_old_name(argc, argv);
    return bad.run(setup);
  }
  if (fs.cmd->parsed()) {
    for (int i = 1; i < argc; ++i) fs_words.emplace_back(argv[i]);
    return fs.run(setup, fs_words);
  }
  if (mem.cmd->parsed()) return mem.run(setup);
  if (notify.cmd->parsed()) return notify.run(setup);
  if (flush.cmd->parsed()) return flush_command::run(setup);
  return kUnknown;
}

}  // namespace

int main(int argc, char** argv) {
  // Whatever a check did not expect still ends in one line and UNKNOWN ("could not
  // tell"), never in std::terminate's abort.
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::printf("UNKNOWN - trainwatch: %s\n", e.what());
    return kUnknown;
  }
}
