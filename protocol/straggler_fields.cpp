#include "straggler_fields.hpp"

namespace trainctl::straggler_fields {

void report(rank_beat& b, std::int64_t step, std::int64_t slow_us, std::int64_t fastest_us) {
  b.straggler.step.store(step, std::memory_order_relaxed);
  b.straggler.slow_us.store(slow_us, std::memory_order_relaxed);
  b.straggler.fastest_us.store(fastest_us, std::memory_order_relaxed);
  b.straggler.reports.fetch_add(1, std::memory_order_release);
}

straggler_report last_report(const rank_beat& b) {
  straggler_report r;
  r.reports = b.straggler.reports.load(std::memory_order_acquire);
  r.step = b.straggler.step.load(std::memory_order_relaxed);
  r.slow_us = b.straggler.slow_us.load(std::memory_order_relaxed);
  r.fastest_us = b.straggler.fastest_us.load(std::memory_order_relaxed);
  return r;
}

void add_work(rank_beat& b, std::int64_t steps, std::int64_t work_us, std::int64_t slowest_us, bool marked) {
  b.work_marked.store(marked ? 1 : 0, std::memory_order_relaxed);
  b.work.total_us.fetch_add(work_us * steps, std::memory_order_relaxed);
  b.work.slowest_total_us.fetch_add(slowest_us * steps, std::memory_order_relaxed);
  b.work.timed_steps.fetch_add(steps, std::memory_order_release);
}

work_totals work(const rank_beat& b) {
  work_totals w;
  w.timed_steps = b.work.timed_steps.load(std::memory_order_acquire);
  w.total_us = b.work.total_us.load(std::memory_order_relaxed);
  w.slowest_total_us = b.work.slowest_total_us.load(std::memory_order_relaxed);
  w.marked = b.work_marked.load(std::memory_order_relaxed) == 1;
  return w;
}

void clear(rank_beat& b) {
  b.straggler.reports.store(0, std::memory_order_relaxed);
  b.straggler.step.store(0, std::memory_order_relaxed);
  b.straggler.slow_us.store(0, std::memory_order_relaxed);
  b.straggler.fastest_us.store(0, std::memory_order_relaxed);
  b.work_marked.store(0, std::memory_order_relaxed);
  b.work.timed_steps.store(0, std::memory_order_relaxed);
  b.work.total_us.store(0, std::memory_order_relaxed);
  b.work.slowest_total_us.store(0, std::memory_order_relaxed);
}

bool sane(const rank_beat& b) {
  const std::int32_t marked = b.work_marked.load(std::memory_order_relaxed);
  return marked >= 0 && marked <= 1 && b.work.timed_steps.load(std::memory_order_relaxed) >= 0 &&
         b.work.total_us.load(std::memory_order_relaxed) >= 0 &&
         b.work.slowest_total_us.load(std::memory_order_relaxed) >= 0;
}

}  // namespace trainctl::straggler_fields
