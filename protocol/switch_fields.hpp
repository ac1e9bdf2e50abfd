// The switches' fields of the node state and their rules, as code: the only place that
// reads or writes them (scripts/protocol_fields.py fails on a raw access elsewhere).
//
//   slots[i].state  0 free, 1 being written, 2 ready. The first process that registers a
//                   switch (a rank's controller) claims a free slot with a
//                   compare-and-swap 0 -> 1, writes kind, name and path, then stores 2
//                   with release and bumps seq. A slot is never freed.
//   slots[i].token  exit switch: the file's mtime (ns) while it exists, 0 while not,
//                   stored by the publisher at each look. Save switch: the newest touch
//                   counted, moved only forward by a compare-and-swap (a touch counts
//                   once even when a publisher that was taken over ends a look).
//   slots[i].count  save switch: the touches counted (each new mtime once), raised after
//                   the token moved by more than one touch's resolution; every rank
//                   saves once per count, agreed or not.
//   save_max        the sum of the save slots' counts: "anything new?".
//
// Readers (every rank, `trainctl status`) use a slot only while it is ready and of the
// kind they registered: junk over a damaged state reads as no switch. A rank that falls
// back to a private state seeds its slot with what it already counted (seed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "node_state.hpp"

namespace trainctl::switch_fields {

// Finds the slot holding (kind, path) or claims a free one (lock-free: any number of
// processes may register at once); -1 when all are taken or the path is too long.
int claim(node_state& ns, switch_kind kind, const std::string& name, const std::string& path);

// Whether slot `slot` is ready and holds a switch of `kind`.
bool holds(const node_state& ns, int slot, switch_kind kind);
std::int64_t token(const node_state& ns, int slot);
std::int64_t count(const node_state& ns, int slot);

// A private state's slot starts from what the rank had counted in the shared one.
void seed(node_state& ns, int slot, std::int64_t token, std::int64_t count);

// A ready slot, copied out.
struct switch_view {
  int slot = -1;
  switch_kind kind = switch_kind::exit;
  std::string name, path;
  std::int64_t token = 0, count = 0;
};
std::vector<switch_view> ready(const node_state& ns);

// The publisher's look at an exit switch: its mtime now (0: absent). True when changed.
bool look_exit(node_state& ns, int slot, std::int64_t token);
// The publisher's look at a save switch: its mtime now. True when it counted a new touch
// (newer than the last counted by more than `one_touch_ns`).
bool look_save(node_state& ns, int slot, std::int64_t token, std::int64_t one_touch_ns);
// The sum of the save counts, after a look at every slot.
void set_save_total(node_state& ns, std::int64_t total);

// "" when every slot is one a writer could have left, else which field is not.
std::string bad(const node_state& ns);

}  // namespace trainctl::switch_fields
