#include "save_fields.hpp"

namespace trainctl::save_fields {

void asked(rank_beat& b, std::int64_t step, std::int64_t now_ms) {
  b.saves.asked_ms.store(now_ms, std::memory_order_relaxed);
  b.saves.asked_step1.store(step + 1, std::memory_order_release);
}

void committed(rank_beat& b, std::int64_t step, std::int64_t now_ms) {
  b.saves.committed_ms.store(now_ms, std::memory_order_relaxed);
  std::int64_t was = b.saves.committed_step1.load(std::memory_order_relaxed);
  while (was < step + 1 && !b.saves.committed_step1.compare_exchange_weak(was, step + 1, std::memory_order_release)) {
  }
}

void pending(rank_beat& b, std::int32_t count, std::int64_t step, std::int64_t began_ms) {
  b.saves.pending_ms.store(count > 0 ? began_ms : 0, std::memory_order_relaxed);
  b.saves.pending_step1.store(count > 0 ? step + 1 : 0, std::memory_order_relaxed);
  b.saves.pending.store(count, std::memory_order_release);
}

void waiting(rank_beat& b, bool waits) { b.saves.waiting.store(waits ? 1 : 0, std::memory_order_release); }

save_view read(const rank_beat& b) {
  save_view v;
  v.asked_step = b.saves.asked_step1.load(std::memory_order_acquire) - 1;
  v.asked_ms = b.saves.asked_ms.load(std::memory_order_relaxed);
  v.committed_step = b.saves.committed_step1.load(std::memory_order_acquire) - 1;
  v.committed_ms = b.saves.committed_ms.load(std::memory_order_relaxed);
  v.pending = b.saves.pending.load(std::memory_order_acquire);
  if (v.pending > 0) {
    v.pending_step = b.saves.pending_step1.load(std::memory_order_relaxed) - 1;
    v.pending_ms = b.saves.pending_ms.load(std::memory_order_relaxed);
  }
  v.waiting = b.saves.waiting.load(std::memory_order_acquire) != 0;
  return v;
}

void clear(rank_beat& b) {
  b.saves.asked_step1.store(0, std::memory_order_relaxed);
  b.saves.asked_ms.store(0, std::memory_order_relaxed);
  b.saves.committed_step1.store(0, std::memory_order_relaxed);
  b.saves.committed_ms.store(0, std::memory_order_relaxed);
  b.saves.pending_step1.store(0, std::memory_order_relaxed);
  b.saves.pending_ms.store(0, std::memory_order_relaxed);
  b.saves.pending.store(0, std::memory_order_relaxed);
  b.saves.waiting.store(0, std::memory_order_relaxed);
}

bool sane(const rank_beat& b) {
  const std::int32_t waiting = b.saves.waiting.load(std::memory_order_relaxed);
  return b.saves.pending.load(std::memory_order_relaxed) >= 0 &&
         b.saves.pending_step1.load(std::memory_order_relaxed) >= 0 &&
         b.saves.pending_ms.load(std::memory_order_relaxed) >= 0 && waiting >= 0 && waiting <= 1;
}

}  // namespace trainctl::save_fields
