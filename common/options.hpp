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

// How often --metrics-dir's file is rewritten at most (node_exporter is scraped every
// 15 s to a minute): 1 s to 1 h.
constexpr milliseconds kMetricsIntervalDefault{15000};

milliseconds parse_poll_interval(std::string_view text);
milliseconds parse_metrics_interval(std::string_view text);
// --metrics-dir: an absolute path (it is opened on every node of the job).
std::string check_metrics_dir(std::string_view text);
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

}  // namespace option
}  // namespace trainctl
