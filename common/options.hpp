// The one definition of each option that the SPANK plugin, trainctl-run and the
// library share: its default, its limits, and the parse that enforces them. Each parse
// throws parse_error with what is accepted; the caller prefixes the option's name.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "parse.hpp"

namespace trainctl {
namespace option {

using std::chrono::milliseconds;

// How often the node's watcher stats the switch files.
constexpr milliseconds kPollIntervalDefault{10000};
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
milliseconds parse_graceful_exit(std::string_view text);

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
std::vector<int> default_shield();          // TERM, USR1
std::vector<int> default_notices();         // TERM, USR1, USR2: what a supervisor treats as a notice
std::vector<int> default_rank_signals();    // USR1, TERM: what the library catches (TRAINCTL_SIGNALS)

}  // namespace option
}  // namespace trainctl
