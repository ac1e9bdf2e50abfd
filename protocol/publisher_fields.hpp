// The publisher role's fields of the node state and their rules, as code: the only place
// that reads or writes them (scripts/protocol_fields.py fails on a raw access elsewhere).
// node_state_file elects the holder; publisher.hpp is what the holder does.
//
//   publisher_id      (pid << 32 | serial) of the holder; 0 none. Taken with a
//                     compare-and-swap (from none, a dead holder or a stale one), given
//                     back with a compare-and-swap from the holder's own id only.
//   published_ms      the holder's heartbeat (unix ms): stored when it takes the role and
//                     at every look it makes.
//   publish_every_ms  the holder's heartbeat interval: how long others wait before they
//                     take a silent holder's role over (publisher_stale_after_ms).
//   supervised        1 while a supervisor holds the role. Cleared by whoever takes or
//                     gives the role up; the supervisor sets it itself once it holds it.
//                     Ranks read it to know whether a supervisor records their findings.
//   stat_calls        metadata requests the publishers made (a figure for benchmarks).
//
// Ordering: the id is taken (acq_rel) before the heartbeat is stored (release); a
// reader that sees the id loads the heartbeat with acquire.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "node_state.hpp"

namespace trainctl {

namespace publisher_fields {

std::uint64_t holder(const node_state& ns);
inline pid_t holder_pid(std::uint64_t id) { return static_cast<pid_t>(id >> 32); }

// Takes the role from `from` (what holder() read); false when another process changed it
// since. The heartbeat starts now, and the role is not a supervisor's until it says so.
bool take(node_state& ns, std::uint64_t from, std::uint64_t mine, std::int64_t now_ms);
// Gives the role back, when `mine` still holds it.
void give_back(node_state& ns, std::uint64_t mine);

void beat(node_state& ns, std::int64_t now_ms);
std::int64_t beat_ms(const node_state& ns);
void set_interval(node_state& ns, std::int32_t every_ms);
std::int32_t interval_ms(const node_state& ns);

// The holder is a supervisor: its ranks' findings are its to record.
void set_supervised(node_state& ns);
bool supervised(const node_state& ns);

void count_stat(node_state& ns);
std::uint64_t stat_calls(const node_state& ns);

// Every field within what a writer stores: part of damage().
bool sane(const node_state& ns);

}  // namespace publisher_fields

// Whether the role's holder looks gone: none, a pid that no longer exists, or a
// heartbeat older than `stale_ms` (0: never by age).
bool publisher_stale(const node_state& ns, std::int64_t now_ms, std::int64_t stale_ms);

// How old a heartbeat may be before others take the role over: 4 s for a holder that
// beats every second (3 s at least for faster ones), two of its intervals and a second
// for a holder that advertises a longer one.
std::int64_t publisher_stale_after_ms(const node_state& ns);

}  // namespace trainctl
