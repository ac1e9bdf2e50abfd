// The SIGBUS guard of the node state's mappings: a mapped file
// that someone truncates raises SIGBUS at the next read of its pages; the guard turns the
// fault into zero pages that read as damage (node_state_file::damage) instead of killing
// the ranks and their supervisor. The handler's rules are in sigbus_guard.cpp.
#pragma once

namespace trainctl {

// Guards `map` (a node_state mapping of file `fd`); the slot to unguard it with, or -1
// when the process already guards 32 mappings (this one is then unguarded).
int guard_mapping(void* map, int fd);
void unguard_mapping(int slot);
// Whether the guard replaced this mapping's pages after a fault.
bool guard_faulted(int slot);

// Puts the node state's SIGBUS guard (see sigbus_guard.cpp) first again when a handler
// installed later took its place (Python's faulthandler.enable() after the Controller
// was made); that handler then runs for every fault outside a node state. True when it
// had to. Cheap (one sigaction call): the watchers call it at each wake.
bool rearm_sigbus_guard();

}  // namespace trainctl
