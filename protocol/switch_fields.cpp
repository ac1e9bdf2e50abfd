#include "switch_fields.hpp"

#include <cstdio>
#include <cstring>

#include "notice_fields.hpp"

namespace trainctl::switch_fields {

namespace {
constexpr std::uint32_t kFree = 0, kWriting = 1, kReady = 2;
std::string text_of(const char* text, std::size_t size) { return std::string(text, strnlen(text, size)); }
bool terminated(const char* text, std::size_t size) { return std::memchr(text, '\0', size) != nullptr; }
}  // namespace

int claim(node_state& ns, switch_kind kind, const std::string& name, const std::string& path) {
  if (path.size() >= kMaxPath) return -1;
  for (int i = 0; i < kMaxSlots; ++i) {
    switch_slot& s = ns.slots[i];
    std::uint32_t st = s.state.load(std::memory_order_acquire);
    if (st == kFree) {
      std::uint32_t expected = kFree;
      if (s.state.compare_exchange_strong(expected, kWriting, std::memory_order_acq_rel)) {
        s.kind = static_cast<std::uint32_t>(kind);
        std::snprintf(s.name, sizeof s.name, "%s", name.c_str());
        std::snprintf(s.path, sizeof s.path, "%s", path.c_str());
        s.state.store(kReady, std::memory_order_release);
        notice_fields::changed(ns);  // the publisher watches its directory
        return i;
      }
      st = expected;
    }
    // Another process is writing this slot: its fields are complete within microseconds.
    for (int spin = 0; st == kWriting && spin < 100000; ++spin) st = s.state.load(std::memory_order_acquire);
    if (st == kReady && s.kind == static_cast<std::uint32_t>(kind) && path == s.path) return i;
  }
  return -1;
}

bool holds(const node_state& ns, int slot, switch_kind kind) {
  if (slot < 0 || slot >= kMaxSlots || !has_header(ns)) return false;
  const switch_slot& s = ns.slots[slot];
  return s.state.load(std::memory_order_acquire) == kReady && s.kind == static_cast<std::uint32_t>(kind);
}

std::int64_t token(const node_state& ns, int slot) { return ns.slots[slot].token.load(std::memory_order_acquire); }

std::int64_t count(const node_state& ns, int slot) { return ns.slots[slot].count.load(std::memory_order_acquire); }

void seed(node_state& ns, int slot, std::int64_t token, std::int64_t count) {
  ns.slots[slot].token.store(token, std::memory_order_release);
  ns.slots[slot].count.store(count, std::memory_order_release);
}

std::vector<switch_view> ready(const node_state& ns) {
  std::vector<switch_view> out;
  for (int i = 0; i < kMaxSlots; ++i) {
    const switch_slot& s = ns.slots[i];
    if (s.state.load(std::memory_order_acquire) != kReady) continue;
    switch_view v;
    v.slot = i;
    v.kind = s.kind == static_cast<std::uint32_t>(switch_kind::save) ? switch_kind::save : switch_kind::exit;
    v.name = text_of(s.name, sizeof s.name);
    v.path = text_of(s.path, sizeof s.path);
    v.token = s.token.load(std::memory_order_acquire);
    v.count = s.count.load(std::memory_order_acquire);
    out.push_back(std::move(v));
  }
  return out;
}

bool look_exit(node_state& ns, int slot, std::int64_t token) {
  return ns.slots[slot].token.exchange(token, std::memory_order_release) != token;
}

bool look_save(node_state& ns, int slot, std::int64_t token, std::int64_t one_touch_ns) {
  switch_slot& s = ns.slots[slot];
  // A touch is a newer mtime; the removal of the file is not one.
  std::int64_t counted = s.token.load(std::memory_order_acquire);
  if (token <= counted || !s.token.compare_exchange_strong(counted, token, std::memory_order_acq_rel) ||
      token - counted <= one_touch_ns)
    return false;
  s.count.fetch_add(1, std::memory_order_acq_rel);
  return true;
}

void set_save_total(node_state& ns, std::int64_t total) {
  if (total != ns.save_max.load(std::memory_order_relaxed)) ns.save_max.store(total, std::memory_order_release);
}

std::string bad(const node_state& ns) {
  if (ns.save_max.load(std::memory_order_relaxed) < 0) return "the save switches' total";
  for (const switch_slot& s : ns.slots) {
    const std::uint32_t st = s.state.load(std::memory_order_acquire);
    const std::int64_t token = s.token.load(std::memory_order_relaxed), count = s.count.load(std::memory_order_relaxed);
    if (st > kReady) return "a switch slot's state";
    if (st == kFree && (s.kind != 0 || token != 0 || count != 0 || s.name[0] != 0 || s.path[0] != 0))
      return "a free switch slot that holds data";
    if (st == kReady &&
        ((s.kind != static_cast<std::uint32_t>(switch_kind::exit) &&
          s.kind != static_cast<std::uint32_t>(switch_kind::save)) ||
         token < 0 || count < 0 || !terminated(s.name, sizeof s.name) || !terminated(s.path, sizeof s.path)))
      return "a switch slot's fields";
  }
  return "";
}

}  // namespace trainctl::switch_fields
