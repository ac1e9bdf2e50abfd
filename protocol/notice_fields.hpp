// The notice flags of the node state and their rules, as code: the only place that reads
// or writes them (scripts/protocol_fields.py fails on a raw access elsewhere).
//
//   flags  flag_bits: why every rank should exit at its next agreement. The node's
//          publisher sets and clears its own (the deadline reached, an exit switch
//          present, memory crossed: set); the supervisor raises the notices it saw (a
//          signal, preemption, a hang, a peer's death), never cleared. Read by every
//          rank's check() (valid_flags: the hot path), by a supervisor that does not
//          publish (it relays the publisher's deadline and preemption), and by
//          `trainctl status`.
//   seq    bumped after every change a reader may look again for: a flag, a deadline,
//          a switch registered (the publisher watches the new switch's directory).
//
// Ordering: a writer changes its field with release and then bumps seq with release; a
// reader loads seq with acquire before the fields it reads again.
#pragma once

#include <cstdint>

#include "node_state.hpp"

namespace trainctl {

// The hot path's read: a plain load of the flags and of the magic (the same cache line);
// a state another program overwrote reads as "no flags" until the watcher notices it.
inline std::uint32_t valid_flags(const node_state& ns) {
  const std::uint32_t f = ns.flags.load(std::memory_order_relaxed);
  return has_header(ns) && (f & ~kKnownFlags) == 0 ? f : 0;
}

namespace notice_fields {

inline std::uint32_t flags(const node_state& ns) { return ns.flags.load(std::memory_order_acquire); }

// A notice the supervisor saw: `bits` stay set for the rest of the step; seq is bumped.
void raise(node_state& ns, std::uint32_t bits);

// The publisher's own bit, set or cleared; true when it changed. The publisher bumps
// seq once for everything one look changed (changed()).
bool set(node_state& ns, std::uint32_t bit, bool on);

// Something a reader may look again for changed (after its own fields were stored).
void changed(node_state& ns);
std::uint32_t seq(const node_state& ns);

// No bit a publisher or supervisor writes is unknown: part of damage().
bool sane(const node_state& ns);

}  // namespace notice_fields
}  // namespace trainctl
