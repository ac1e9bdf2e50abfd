#include "beat_fields.hpp"

#include <signal.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "error_fields.hpp"
#include "save_fields.hpp"
#include "straggler_fields.hpp"

namespace trainctl::beat_fields {

namespace {

constexpr std::uint32_t kFree = 0, kWriting = 1, kReady = 2;

void raise_to(std::atomic<std::int64_t>& longest, std::int64_t ms) {
  std::int64_t seen = longest.load(std::memory_order_relaxed);
  while (ms > seen && !longest.compare_exchange_weak(seen, ms, std::memory_order_relaxed)) {
  }
}

void clear(rank_beat& b) {
  b.beat_ms.store(0, std::memory_order_relaxed);
  b.step.store(0, std::memory_order_relaxed);
  b.step_us.store(0, std::memory_order_relaxed);
  b.slow.store(0, std::memory_order_relaxed);
  b.exiting.store(0, std::memory_order_relaxed);
  b.phase.store(kPhaseTraining, std::memory_order_relaxed);
  b.phase_ms.store(0, std::memory_order_relaxed);
  straggler_fields::clear(b);
  save_fields::clear(b);
  error_fields::clear(b);
  b.rank.store(-1, std::memory_order_release);
}

bool gone(std::int32_t pid) { return pid != 0 && kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace

int claim(node_state& ns, std::int32_t pid) {
  for (int i = 0; i < kMaxRanks; ++i)
    if (ns.beats[i].pid.load(std::memory_order_acquire) == pid) return i;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < kMaxRanks; ++i) {
      rank_beat& b = ns.beats[i];
      std::int32_t old = b.pid.load(std::memory_order_acquire);
      // First pass: free slots; second: slots of processes that are gone.
      if (pass == 0 ? old != 0 : !gone(old)) continue;
      if (!b.pid.compare_exchange_strong(old, pid, std::memory_order_acq_rel)) continue;
      clear(b);
      return i;
    }
  }
  return -1;
}

void release(rank_beat& b) { b.pid.store(0, std::memory_order_release); }

void set_step_times(rank_beat& b, std::int64_t step_us, std::int32_t slow) {
  b.slow.store(slow, std::memory_order_relaxed);
  b.step_us.store(step_us, std::memory_order_relaxed);
}

void show_phase(rank_beat& b, std::int32_t phase, std::int64_t since_ms) {
  b.phase_ms.store(since_ms, std::memory_order_relaxed);
  b.phase.store(phase, std::memory_order_release);
}

void set_exiting(rank_beat& b, bool exiting) { b.exiting.store(exiting ? 1 : 0, std::memory_order_release); }

beat_view read(const rank_beat& b) {
  beat_view v;
  v.pid = b.pid.load(std::memory_order_acquire);
  v.beat_ms = b.beat_ms.load(std::memory_order_acquire);
  v.rank = b.rank.load(std::memory_order_acquire);
  v.step = b.step.load(std::memory_order_relaxed);
  v.step_us = b.step_us.load(std::memory_order_relaxed);
  v.slow = b.slow.load(std::memory_order_relaxed);
  v.exiting = b.exiting.load(std::memory_order_acquire) != 0;
  v.phase = b.phase.load(std::memory_order_acquire);
  v.phase_ms = b.phase_ms.load(std::memory_order_relaxed);
  return v;
}

const rank_beat* of_pid(const node_state& ns, std::int32_t pid) {
  if (!has_header(ns) || pid <= 0) return nullptr;
  for (const rank_beat& b : ns.beats)
    if (b.pid.load(std::memory_order_acquire) == pid && b.beat_ms.load(std::memory_order_acquire) > 0) return &b;
  return nullptr;
}

void learn_save_ms(node_state& ns, std::int64_t ms) { raise_to(ns.longest_save_ms, ms); }
void learn_quiet_ms(node_state& ns, std::int64_t ms) { raise_to(ns.longest_quiet_ms, ms); }
void learn_phase_ms(node_state& ns, int phase_slot, std::int64_t ms) {
  if (phase_slot >= 0 && phase_slot < kMaxPhases) raise_to(ns.phases[phase_slot].longest_ms, ms);
}
std::int64_t longest_save_ms(const node_state& ns) { return ns.longest_save_ms.load(std::memory_order_relaxed); }
std::int64_t longest_quiet_ms(const node_state& ns) { return ns.longest_quiet_ms.load(std::memory_order_relaxed); }

bool valid_phase_name(const std::string& name) {
  if (name.empty() || name.size() >= kMaxName || name[0] == '.' || name[0] == '-') return false;
  for (const char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') return false;
  return true;
}

int claim_phase(node_state& ns, const std::string& name) {
  if (!valid_phase_name(name)) return -1;
  for (int i = 0; i < kMaxPhases; ++i) {
    phase_slot& s = ns.phases[i];
    std::uint32_t st = s.state.load(std::memory_order_acquire);
    if (st == kFree) {
      std::uint32_t expected = kFree;
      if (s.state.compare_exchange_strong(expected, kWriting, std::memory_order_acq_rel)) {
        std::snprintf(s.name, sizeof s.name, "%s", name.c_str());
        s.state.store(kReady, std::memory_order_release);
        return i;
      }
      st = expected;
    }
    for (int spin = 0; st == kWriting && spin < 100000; ++spin) st = s.state.load(std::memory_order_acquire);
    if (st == kReady && std::strncmp(s.name, name.c_str(), sizeof s.name) == 0) return i;
  }
  return -1;
}

std::string phase_name(const node_state& ns, int slot) {
  if (slot < 0 || slot >= kMaxPhases) return "";
  const phase_slot& s = ns.phases[slot];
  if (s.state.load(std::memory_order_acquire) != kReady) return "";
  return std::string(s.name, strnlen(s.name, sizeof s.name));
}

std::vector<std::pair<std::string, std::int64_t>> learnt_phases(const node_state& ns) {
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (int i = 0; i < kMaxPhases; ++i) {
    const std::string name = phase_name(ns, i);
    if (!name.empty()) out.emplace_back(name, ns.phases[i].longest_ms.load(std::memory_order_relaxed));
  }
  return out;
}

std::string bad(const node_state& ns) {
  if (longest_save_ms(ns) < 0 || longest_quiet_ms(ns) < 0) return "a learnt length out of range";
  for (const rank_beat& b : ns.beats) {
    const beat_view v = read(b);
    const std::int32_t exiting = b.exiting.load(std::memory_order_relaxed);
    if (v.pid < 0 || v.rank < -1 || v.beat_ms < 0 || v.step_us < 0 || v.slow < 0 || exiting < 0 || exiting > 1 ||
        v.phase < 0 || v.phase > kPhaseNamed + kMaxPhases || v.phase_ms < 0)
      return "a heartbeat slot's fields";
    if (!straggler_fields::sane(b) || !save_fields::sane(b)) return "a heartbeat slot's fields";
  }
  for (const phase_slot& p : ns.phases) {
    const std::uint32_t st = p.state.load(std::memory_order_acquire);
    const std::int64_t longest = p.longest_ms.load(std::memory_order_relaxed);
    if (st > kReady || p.reserved != 0 || longest < 0 || (st == kFree && (p.name[0] != 0 || longest != 0)) ||
        (st == kReady && std::memchr(p.name, '\0', sizeof p.name) == nullptr))
      return "a phase slot's fields";
  }
  return "";
}

}  // namespace trainctl::beat_fields
