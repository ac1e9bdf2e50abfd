// The one definition of each option that the SPANK plugin, trainctl-run and the
// library share: its default, its limits, and the parse that enforces them. Each parse
// throws parse_error with what is accepted; the caller prefixes the option's name.
#pragma once

#include <chrono>
#include <csignal>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "parse.hpp"

namespace trainctl {
namespace option {

using std::chrono::milliseconds;

// How often the node's watcher stats the switch files.
constexpr milliseconds kPollIntervalDefault{10000};
constexpr milliseconds kOnNoticeTimeoutDefault{60000};  // --on-notice's command, 1 s to 1 h
constexpr milliseconds kOnNoticeTimeoutMax{3600 * 1000};
constexpr milliseconds kPollIntervalMin{100};
constexpr milliseconds kPollIntervalMax{3600 * 1000};
// How often a supervisor reads the job's EndTime from the controller (12 RPCs an hour).
constexpr milliseconds kEndtimePollDefault{300 * 1000};
constexpr milliseconds kEndtimePollMin{1000};
constexpr milliseconds kEndtimePollMax{24 * 3600 * 1000};
// How long before EndTime the ranks are asked to exit; a bare number is minutes.
constexpr milliseconds kGracefulExitMax{30LL * 24 * 3600 * 1000};

milliseconds parse_poll_interval(std::string_view text);
milliseconds parse_endtime_poll(std::string_view text);
// --graceful-exit: a duration, or "auto" (kGracefulExitAuto): learnt from the saves of
// the job array (save_times.hpp).
milliseconds parse_graceful_exit(std::string_view text);
constexpr milliseconds kGracefulExitAuto{-1};
// --on-notice-timeout (1 s to 1 h) and --on-notice (non-empty, under 4 KiB, one line);
// each parse_error names the option.
milliseconds parse_on_notice_timeout(std::string_view text);
// --hang-timeout: "off" or 0 (none), "auto" (kHangTimeoutAuto: learnt, hang_budget.hpp),
// or 1 s to 7 days; a bare number is minutes.
milliseconds parse_hang_timeout(std::string_view text);
constexpr milliseconds kHangTimeoutAuto{-1};
// --hang-phase-timeout: NAME=DURATION[,NAME=DURATION...], NAME a phase ("save", or one
// the loop marks, 1-31 of [A-Za-z0-9_.-]), DURATION 1 s to 7 days (a bare number is
// minutes). Returns the pairs; a name given twice is refused.
std::vector<std::pair<std::string, milliseconds>> parse_hang_phase_timeout(std::string_view text);
// --hang-action: alert, save-exit, end-step; returns 0, 1, 2 in that order.
int parse_hang_action(std::string_view text);
std::string check_on_notice(std::string_view command);
// --no-progress-runs: 0 (off) to 1000 runs in a row without progress; the default 3 is
// NVIDIA's resiliency extension's.
constexpr int kNoProgressRunsDefault = 3;
int parse_no_progress_runs(std::string_view text);

// The signals that can carry a notice: ones a process can catch and that no fault
// (SEGV, BUS, ILL, FPE, ABRT, TRAP, SYS), job control (STOP, TSTP, CONT, TTIN, TTOU)
// or child (CHLD) raises on its own, and that the C library does not keep for itself
// (32 and 33 under glibc): HUP, INT, USR1, USR2, ALRM, TERM, URG, XCPU, VTALRM, PROF,
// WINCH, PWR, and the real-time signals RTMIN..RTMAX by number.
bool is_notice_signal(int sig);
int parse_notice_signal(std::string_view text);
// "USR1,TERM"; "none" or "" is the empty list.
std::vector<int> parse_notice_signal_list(std::string_view text);

// The graceful signal ranks receive, and the signals a launcher ignores by default.
constexpr int kGracefulSignalDefault = 10;  // SIGUSR1 on Linux (static_assert'ed in options.cpp)
// TERM, USR1: an array, because the plugin's forked task reads it before exec, where
// nothing should allocate.
inline constexpr int kDefaultShield[] = {SIGTERM, SIGUSR1};
std::vector<int> default_shield();        // the same, as a list
std::vector<int> default_notices();       // TERM, USR1, USR2: what a supervisor treats as a notice
std::vector<int> default_rank_signals();  // USR1, TERM: what the library catches (TRAINCTL_SIGNALS)

// The supervisor's flags: the name trainctl-run reads and the plugin passes (and offers
// to srun, sbatch and salloc without the dashes), and one help text. Defaults are
// added where the help is shown, from the constants above.
struct flag_spec {
  const char* name;
  const char* help;
  const char* bare() const { return name + 2; }      // "graceful-exit"
  std::string with(const std::string& value) const;  // "--graceful-exit=VALUE"
};
inline constexpr flag_spec kGracefulExit{
    "--graceful-exit",
    "ask the ranks to save and exit this long before the job's EndTime: 90s, 10m, 1h (a bare number is minutes), "
    "or auto: the longest save seen in this job array x1.5 + 30s"};
inline constexpr flag_spec kKillSwitch{"--kill-switch",
                                       "while this file exists the ranks save and exit, and a new task ends at once "
                                       "(default $SLURM_SUBMIT_DIR/kill-switch-<job name>)"};
inline constexpr flag_spec kSaveSwitch{
    "--save-switch",
    "each touch of this file makes every rank save once (default $SLURM_SUBMIT_DIR/save-switch-<job name>)"};
inline constexpr flag_spec kGracefulSignal{"--graceful-signal", "the signal ranks receive with a notice"};
inline constexpr flag_spec kPollInterval{"--poll-interval", "how often the switch files are stat'ed"};
inline constexpr flag_spec kEndtimePoll{"--endtime-poll", "how often the job's EndTime is read from the controller"};
inline constexpr flag_spec kLaunchers{"--launchers", "extra launcher names that are never ranks, comma separated"};
inline constexpr flag_spec kNoShield{"--no-shield", "do not shield the command from any signal"};
inline constexpr flag_spec kBatch{"--batch",
                                  "this is the batch step: signal only processes that carry a rank variable"};
inline constexpr flag_spec kOnNotice{
    "--on-notice",
    "run this shell command on the job's first node when a notice arrives, once per kind (deadline, preempted, "
    "signal); TRAINCTL_NOTICE, TRAINCTL_DEADLINE and TRAINCTL_END_TIME say which and when"};
inline constexpr flag_spec kOnNoticeTimeout{"--on-notice-timeout", "end the --on-notice command after this long"};
inline constexpr flag_spec kHangTimeout{
    "--hang-timeout",
    "a rank that reaches no agreement (check()) for this long is hung: every rank's Python and native stacks go "
    "to LOG_DIR/trainctl-<user>/stacks-<job>/, then --hang-action; e.g. 20m, or auto (5 times the longest time between "
    "agreements in this job array, at least 1m; 30m before anything is learnt) (default off). A rank inside a "
    "save or a marked phase has that phase's budget (--hang-phase-timeout)"};
inline constexpr flag_spec kHangPhaseTimeout{
    "--hang-phase-timeout",
    "NAME=DURATION,...: the hang budget of a phase: save (a save trainctl asked for, or the loop's own "
    "ctl.phase(\"save\")) or a phase the loop marks (ctl.phase(\"eval\")); default: 3 times the longest it "
    "took in this job array, at least --hang-timeout; 30m before one has finished"};
inline constexpr flag_spec kHangStartTimeout{
    "--hang-start-timeout",
    "a rank that has not reached its first agreement this long after it started (process group init, "
    "rendezvous, the first data load) is hung too; default with --hang-timeout: 3 times it, at least 10m"};
inline constexpr flag_spec kHangAction{
    "--hang-action",
    "after the stacks of a hang: alert (log, and --on-notice with TRAINCTL_NOTICE=hang), save-exit (the ranks save "
    "and exit, reason hang), or end-step (kill the step so the next array task resumes)"};
inline constexpr flag_spec kLogDir{"--log-dir",
                                   "where trainctl-<user>/stacks-<job>/ and slow_nodes go (default "
                                   "$TRAINCTL_LOG_DIR, else $SLURM_SUBMIT_DIR)"};
inline constexpr flag_spec kNoProgressRuns{
    "--no-progress-runs",
    "when this many runs of the job array (or starts of the requeued job) in a row failed without getting past "
    "the step they resumed at, the next one ends at its first step with exit status 93 and the array's pending "
    "tasks are cancelled; runs that fail before their first check() count too, the last of them ending with 93; "
    "0: off (default 3, or $TRAINCTL_NO_PROGRESS_RUNS)"};
inline constexpr flag_spec kAdopt{"--adopt",
                                  "supervise this existing child instead of starting COMMAND (SPANK plugin)"};

}  // namespace option
}  // namespace trainctl
