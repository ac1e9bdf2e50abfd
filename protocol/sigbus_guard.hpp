// The SIGBUS guard of the node state's mappings (internal to protocol/): a mapped file
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

}  // namespace trainctl
