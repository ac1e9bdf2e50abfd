#include "run_option_table.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "env_names.hpp"
#include "options.hpp"
#include "parse.hpp"
#include "switch_paths.hpp"

namespace trainctl {
namespace {

using std::chrono::milliseconds;
using row = run_option;

std::string none() { return ""; }

// A switch file's path: any path of one line under 1 KiB ("" is the default path).
std::string switch_path(const std::string& value) {
  if (value.size() >= 1024) throw parse_error("the path is longer than 1023 characters");
  if (value.find('\n') != std::string::npos) throw parse_error("the path contains a newline");
  return value;
}

const std::vector<run_option> kTable = {
    {"--graceful-exit", "DURATION|auto", nullptr, row::kPlugin,
     "ask the ranks to save and exit this long before the job's EndTime: 90s, 10m, 1h (a bare number is minutes), "
     "or auto: the longest save seen in this job array x1.5 + 30s",
     none, [](supervisor_options& o, const std::string& v) { o.graceful_exit = option::parse_graceful_exit(v); }},
    {"--deadline", "UNIXTIME", nullptr, row::kRun, "ask the ranks to exit at this unix time (seconds)", none,
     [](supervisor_options& o, const std::string& v) { o.deadline = parse_unix_time(v); }},
    {"--kill-switch", "PATH", "KILL_SWITCH", row::kPlugin,
     "while this file exists the ranks save and exit, and a new task ends at once (default "
     "$SLURM_SUBMIT_DIR/kill-switch-<job name>)",
     none, [](supervisor_options& o, const std::string& v) { o.kill_switch = switch_path(v); }},
    {"--save-switch", "PATH", "SAVE_SWITCH", row::kPlugin,
     "each touch of this file makes every rank save once (default $SLURM_SUBMIT_DIR/save-switch-<job name>)", none,
     [](supervisor_options& o, const std::string& v) { o.save_switch = switch_path(v); }},
    {"--graceful-signal", "SIGNAL", nullptr, row::kPlugin, "the signal ranks receive with a notice",
     [] { return signal_name(option::kGracefulSignalDefault); },
     [](supervisor_options& o, const std::string& v) { o.graceful_signal = option::parse_notice_signal(v); }},
    {"--shield", "SIGNALS", nullptr, row::kRun,
     "signals the command ignores so they cannot kill a launcher (default TERM,USR1 and the graceful signal)", none,
     [](supervisor_options& o, const std::string& v) { o.shield = option::parse_notice_signal_list(v); }},
    {"--no-shield", nullptr, nullptr, row::kRun, "do not shield the command from any signal", none,
     [](supervisor_options& o, const std::string&) { o.shield.clear(); }},
    {"--notice-signals", "SIGNALS", nullptr, row::kPlugin,
     "more signals that are a notice, as TERM, USR1 and USR2 are: a supervisor that receives one tells the ranks "
     "to save and exit (e.g. XCPU, where a site or a script sends the job that)",
     none,
     [](supervisor_options& o, const std::string& v) {
       for (int sig : option::parse_notice_signal_list(v))
         if (std::find(o.notices.begin(), o.notices.end(), sig) == o.notices.end()) o.notices.push_back(sig);
     }},
    {"--poll-interval", "DURATION", nullptr, row::kRun, "how often the switch files are stat'ed",
     [] { return format_duration(option::kPollIntervalDefault); },
     [](supervisor_options& o, const std::string& v) { o.poll_interval = option::parse_poll_interval(v); }},
    {"--endtime-poll", "DURATION", nullptr, row::kRun, "how often the job's EndTime is read from the controller",
     [] { return format_duration(option::kEndtimePollDefault); },
     [](supervisor_options& o, const std::string& v) { o.endtime_poll = option::parse_endtime_poll(v); }},
    {"--launchers", "NAMES", nullptr, row::kRun, "extra launcher names that are never ranks, comma separated", none,
     [](supervisor_options& o, const std::string& v) {
       for (std::string_view name : split(v, ','))
         if (!name.empty()) o.launchers.emplace_back(name);
     }},
    {"--batch", nullptr, nullptr, row::kRun, "this is the batch step: signal only processes that carry a rank variable",
     none, [](supervisor_options& o, const std::string&) { o.batch = true; }},
    {"--on-notice", "COMMAND", nullptr, row::kPlugin,
     "run this shell command on the job's first node when a notice arrives, once per kind (deadline, preempted, "
     "signal); TRAINCTL_NOTICE, TRAINCTL_DEADLINE and TRAINCTL_END_TIME say which and when",
     none, [](supervisor_options& o, const std::string& v) { o.on_notice = option::check_on_notice(v); }},
    {"--on-notice-timeout", "DURATION", nullptr, row::kRun, "end the --on-notice command after this long",
     [] { return format_duration(option::kOnNoticeTimeoutDefault); },
     [](supervisor_options& o, const std::string& v) { o.on_notice_timeout = option::parse_on_notice_timeout(v); }},
    {"--hang-timeout", "DURATION", nullptr, row::kPlugin,
     "a rank that reaches no agreement (check()) for this long is hung: every rank's Python and native stacks go "
     "to LOG_DIR/trainctl-<user>/stacks-<job>/, then --hang-action; e.g. 20m, or auto (5 times the longest time "
     "between agreements in this job array, at least 1m; 30m before anything is learnt) (default off). A rank "
     "inside a save or a marked phase has that phase's budget (--hang-phase-timeout)",
     none, [](supervisor_options& o, const std::string& v) { o.hang.timeout = option::parse_hang_timeout(v); }},
    {"--hang-phase-timeout", "NAME=DURATION,...", nullptr, row::kPlugin,
     "NAME=DURATION,...: the hang budget of a phase: save (a save trainctl asked for, or the loop's own "
     "ctl.phase(\"save\")) or a phase the loop marks (ctl.phase(\"eval\")); default: 3 times the longest it "
     "took in this job array, at least --hang-timeout; 30m before one has finished",
     none,
     [](supervisor_options& o, const std::string& v) {
       for (const auto& [phase, budget] : option::parse_hang_phase_timeout(v)) o.hang.phase_timeouts[phase] = budget;
     }},
    {"--hang-start-timeout", "DURATION", nullptr, row::kRun,
     "a rank that has not reached its first agreement this long after it started (process group init, "
     "rendezvous, the first data load) is hung too; default with --hang-timeout: 3 times it, at least 10m",
     none,
     [](supervisor_options& o, const std::string& v) {
       try {
         o.hang.start_timeout = option::parse_hang_timeout(v);
       } catch (const parse_error& e) {
         const std::string what = e.what();  // names --hang-timeout, whose rules it shares
         const std::string shared = "--hang-timeout: ";
         throw parse_error(what.rfind(shared, 0) == 0 ? what.substr(shared.size()) : what);
       }
       if (o.hang.start_timeout == option::kHangTimeoutAuto)
         throw parse_error("'auto' is for --hang-timeout only; accepted: a duration such as 20m, or off");
     }},
    {"--hang-action", "alert|save-exit|end-step", nullptr, row::kPlugin,
     "after the stacks of a hang: alert (log, and --on-notice with TRAINCTL_NOTICE=hang), save-exit (the ranks save "
     "and exit, reason hang), or end-step (kill the step so the next array task resumes)",
     [] { return std::string("alert"); },
     [](supervisor_options& o, const std::string& v) {
       o.hang.action = static_cast<hang_action>(option::parse_hang_action(v));
     }},
    {"--metrics-dir", "DIR", nullptr, row::kPlugin,
     "keep the task's live figures (steps, step times, the last committed save, the deadline) in DIR as a "
     "Prometheus textfile for node_exporter's textfile collector, removed as the task ends; DIR must be root's or "
     "yours and writable by no other user (a group only with the sticky bit)",
     none, [](supervisor_options& o, const std::string& v) { o.metrics.dir = option::check_metrics_dir(v); }},
    {"--metrics-interval", "DURATION", nullptr, row::kPlugin, "rewrite the --metrics-dir file at most this often",
     [] { return format_duration(option::kMetricsIntervalDefault); },
     [](supervisor_options& o, const std::string& v) { o.metrics.interval = option::parse_metrics_interval(v); }},
    {"--log-dir", "DIR", nullptr, row::kRun,
     "where trainctl-<user>/stacks-<job>/ and slow_nodes go (default $TRAINCTL_LOG_DIR, else $SLURM_SUBMIT_DIR)", none,
     [](supervisor_options& o, const std::string& v) { o.log_dir = v; }},
    {"--no-progress-runs", "N", nullptr, row::kRun,
     "when this many runs of the job array (or starts of the requeued job) in a row failed without getting past "
     "the step they resumed at, the next one ends at its first step with exit status 93 and the array's pending "
     "tasks are cancelled; runs that fail before their first check() count too, the last of them ending with 93; "
     "0: off (default 3, or $TRAINCTL_NO_PROGRESS_RUNS)",
     none, [](supervisor_options& o, const std::string& v) { o.no_progress_runs = option::parse_no_progress_runs(v); }},
    {"--state", "PATH", nullptr, row::kHidden, "node state file (default: per job step and node)", none,
     [](supervisor_options& o, const std::string& v) { o.state_path = v; }},
};

// A switch given bare is $VAR if set, else its default path; one not given is $VAR.
std::string resolve_switch(const std::vector<given_option>& given, const run_option& row, const std::string& value,
                           const env_lookup& env) {
  if (!is_given(given, row.name)) return env(row.bare_var);
  if (!value.empty()) return value;
  if (!env(row.bare_var).empty()) return env(row.bare_var);
  return default_switch_path(row.bare(), env(env_var::kSlurmSubmitDir), env(env_var::kSlurmJobName));
}

}  // namespace

std::string run_option::with(const std::string& value) const { return std::string(name) + "=" + value; }

const std::vector<run_option>& run_option_table() { return kTable; }

const run_option& run_option_named(std::string_view name) {
  for (const run_option& r : kTable)
    if (name == r.name) return r;
  throw std::logic_error("no supervisor option " + std::string(name));
}

void apply_run_option(const run_option& r, supervisor_options& o, const std::string& value) {
  try {
    r.apply(o, value);
  } catch (const parse_error& e) {
    // Some parsers of options.hpp name their option already (the plugin shows them too).
    const std::string what = e.what();
    if (what.rfind(r.name, 0) == 0) throw;
    throw parse_error(std::string(r.name) + ": " + what);
  }
}

bool is_given(const std::vector<given_option>& given, std::string_view name) {
  return std::any_of(given.begin(), given.end(), [&](const given_option& g) { return name == g.row->name; });
}

supervisor_options supervisor_options_from(const std::vector<given_option>& given, const env_lookup& env) {
  supervisor_options o;
  for (const run_option& r : kTable)
    for (const given_option& g : given)
      if (g.row == &r) apply_run_option(r, o, g.value);
  if (!is_given(given, "--no-shield") &&
      std::find(o.shield.begin(), o.shield.end(), o.graceful_signal) == o.shield.end())
    o.shield.push_back(o.graceful_signal);
  if (!is_given(given, "--hang-start-timeout")) {
    if (o.hang.timeout == option::kHangTimeoutAuto)
      o.hang.start_timeout = std::chrono::minutes(30);  // nothing to learn a start from: auto's first-time budget
    else if (o.hang.timeout.count() > 0)
      o.hang.start_timeout = std::max(3 * o.hang.timeout, milliseconds(std::chrono::minutes(10)));
  }
  if (is_given(given, "--hang-phase-timeout") && o.hang.timeout.count() == 0)
    throw parse_error(
        "--hang-phase-timeout needs --hang-timeout (a duration or auto): without it no hang is looked for");
  o.kill_switch = resolve_switch(given, run_option_named("--kill-switch"), o.kill_switch, env);
  o.save_switch = resolve_switch(given, run_option_named("--save-switch"), o.save_switch, env);
  return o;
}

}  // namespace trainctl
