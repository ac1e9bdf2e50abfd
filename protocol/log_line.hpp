// Where the library's lines go: standard error ("trainctl: ..."), or a sink the program
// installed through the C ABI (trainctl_set_log_fn): the Python package's sends them to
// the logger "trainctl". Any thread may log; never from a signal handler.
#pragma once

#include <cstdarg>

namespace trainctl {

// Python's levels, so the Python sink passes them on as they are.
constexpr int kLogInfo = 20;     // what the ranks decided (exit, save)
constexpr int kLogWarning = 30;  // what went wrong, or works differently

// The sink gets one line without "trainctl: " and without the newline.
using log_sink = void (*)(int level, const char* line, void* user);
// Installs `sink` (null: standard error again). The sink must stay callable for as long
// as any thread may log; a line being written while it changes goes to one or the other.
void set_log_sink(log_sink sink, void* user);

// printf-style; `fmt` starts with "trainctl: " and ends with "\n", as the lines on
// standard error always did.
void log_line(int level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace trainctl
