// Notice signals: a handler that only sets an atomic flag, chains to the handler that
// was installed before it, and is removed again when the last controller closes.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

namespace trainctl {

// Set by the handler (async-signal context, any thread): bit (sig - 1) per signal seen.
extern std::atomic<std::uint64_t> g_signals_seen;

// Installs the handler for each signal (reference-counted per signal). Returns the
// signals that could not be installed (SIGKILL, SIGSTOP, invalid numbers).
std::vector<int> install_notice_handlers(const std::vector<int>& sigs);
// Undoes one install_notice_handlers for these signals; the previous disposition is
// restored when the count drops to zero and our handler is still the one installed.
void remove_notice_handlers(const std::vector<int>& sigs);
// Of `sigs`, SIGUSR1 and SIGUSR2 where their disposition is the default (terminate) are
// ignored from now on: for a rank whose supervisor relays notices as these, one that
// arrives after the rank stopped listening must not kill it on its way out.
void ignore_late_notices(const std::vector<int>& sigs);

}  // namespace trainctl
