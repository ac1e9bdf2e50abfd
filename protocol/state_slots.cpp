#include <signal.h>

#include <algorithm>
#include <cstring>

#include "node_state.hpp"

namespace trainctl {

int claim_switch_slot(node_state& ns, switch_kind kind, const std::string& name, const std::string& path) {
  if (path.size() >= kMaxPath) return -1;
  for (int i = 0; i < kMaxSlots; ++i) {
    switch_slot& s = ns.slots[i];
    std::uint32_t st = s.state.load(std::memory_order_acquire);
    if (st == 0) {
      std::uint32_t expected = 0;
      if (s.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
        s.kind = static_cast<std::uint32_t>(kind);
        std::snprintf(s.name, sizeof s.name, "%s", name.c_str());
        std::snprintf(s.path, sizeof s.path, "%s", path.c_str());
        s.state.store(2, std::memory_order_release);
        ns.seq.fetch_add(1, std::memory_order_release);
        return i;
      }
      st = expected;
    }
    // Another process is writing this slot: its fields are complete within microseconds.
    for (int spin = 0; st == 1 && spin < 100000; ++spin) st = s.state.load(std::memory_order_acquire);
    if (st == 2 && s.kind == static_cast<std::uint32_t>(kind) && path == s.path) return i;
  }
  return -1;
}

bool valid_phase_name(const std::string& name) {
  if (name.empty() || name.size() >= kMaxName || name[0] == '.' || name[0] == '-') return false;
  for (const char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-') return false;
  return true;
}

int claim_phase_slot(node_state& ns, const std::string& name) {
  if (!valid_phase_name(name)) return -1;
  for (int i = 0; i < kMaxPhases; ++i) {
    phase_slot& s = ns.phases[i];
    std::uint32_t st = s.state.load(std::memory_order_acquire);
    if (st == 0) {
      std::uint32_t expected = 0;
      if (s.state.compare_exchange_strong(expected, 1, std::memory_order_acq_rel)) {
        std::snprintf(s.name, sizeof s.name, "%s", name.c_str());
        s.state.store(2, std::memory_order_release);
        return i;
      }
      st = expected;
    }
    for (int spin = 0; st == 1 && spin < 100000; ++spin) st = s.state.load(std::memory_order_acquire);
    if (st == 2 && std::strncmp(s.name, name.c_str(), sizeof s.name) == 0) return i;
  }
  return -1;
}

void raise_to(std::atomic<std::int64_t>& longest, std::int64_t ms) {
  std::int64_t seen = longest.load(std::memory_order_relaxed);
  while (ms > seen && !longest.compare_exchange_weak(seen, ms, std::memory_order_relaxed)) {
  }
}

int claim_beat_slot(node_state& ns, std::int32_t pid) {
  for (int i = 0; i < kMaxRanks; ++i)
    if (ns.beats[i].pid.load(std::memory_order_acquire) == pid) return i;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 0; i < kMaxRanks; ++i) {
      rank_beat& b = ns.beats[i];
      std::int32_t old = b.pid.load(std::memory_order_acquire);
      // First pass: free slots; second: slots of processes that are gone.
      if (pass == 0 ? old != 0 : (old == 0 || kill(old, 0) == 0 || errno != ESRCH)) continue;
      if (!b.pid.compare_exchange_strong(old, pid, std::memory_order_acq_rel)) continue;
      b.beat_ms.store(0, std::memory_order_relaxed);
      b.step.store(0, std::memory_order_relaxed);
      b.step_us.store(0, std::memory_order_relaxed);
      b.slow.store(0, std::memory_order_relaxed);
      b.exiting.store(0, std::memory_order_relaxed);
      b.phase.store(kPhaseTraining, std::memory_order_relaxed);
      b.phase_ms.store(0, std::memory_order_relaxed);
      b.work_marked.store(0, std::memory_order_relaxed);
      b.work.timed_steps.store(0, std::memory_order_relaxed);
      b.work.total_us.store(0, std::memory_order_relaxed);
      b.work.slowest_total_us.store(0, std::memory_order_relaxed);
      b.saves.asked_step1.store(0, std::memory_order_relaxed);
      b.saves.asked_ms.store(0, std::memory_order_relaxed);
      b.saves.committed_step1.store(0, std::memory_order_relaxed);
      b.saves.committed_ms.store(0, std::memory_order_relaxed);
      b.saves.pending_step1.store(0, std::memory_order_relaxed);
      b.saves.pending_ms.store(0, std::memory_order_relaxed);
      b.saves.pending.store(0, std::memory_order_relaxed);
      b.saves.waiting.store(0, std::memory_order_relaxed);
      b.error_len.store(0, std::memory_order_relaxed);
      b.rank.store(-1, std::memory_order_release);
      return i;
    }
  }
  return -1;
}

std::string printable_line(const std::string& text, std::size_t max) {
  std::string out = text.substr(0, text.find('\n'));
  if (out.size() > max) out.resize(max);
  for (char& c : out)
    if (c < ' ' || c > '~') c = '?';
  return out;
}

void note_rank_error(rank_beat& b, const std::string& text) {
  if (b.error_len.load(std::memory_order_acquire) != 0) return;
  const std::string line = printable_line(text, kMaxError);
  std::memcpy(b.error, line.data(), line.size());
  b.error_len.store(static_cast<std::int32_t>(line.size()), std::memory_order_release);
}

std::string rank_error(const rank_beat& b) {
  const std::int32_t n = b.error_len.load(std::memory_order_acquire);
  if (n <= 0 || n > kMaxError) return "";
  return printable_line(std::string(b.error, static_cast<std::size_t>(n)), kMaxError);
}

}  // namespace trainctl
