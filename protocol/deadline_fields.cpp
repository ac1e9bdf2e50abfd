#include "deadline_fields.hpp"

#include "notice_fields.hpp"

namespace trainctl::deadline_fields {

std::int64_t deadline_ms(const node_state& ns) { return ns.deadline_ms.load(std::memory_order_acquire); }

end_read end_time(const node_state& ns) {
  return {ns.end_ms.load(std::memory_order_acquire), ns.end_read_ms.load(std::memory_order_acquire)};
}

bool publish(node_state& ns, std::int64_t deadline_ms, end_read read) {
  const end_read known = end_time(ns);
  if (known.read_ms > read.read_ms && known.end_ms != read.end_ms) return false;
  ns.end_ms.store(read.end_ms, std::memory_order_release);
  ns.end_read_ms.store(read.read_ms, std::memory_order_release);
  ns.deadline_ms.store(deadline_ms, std::memory_order_release);
  notice_fields::changed(ns);
  return true;
}

bool learn(node_state& ns, end_read news, std::int64_t now_ms, std::int64_t* was_end_ms) {
  std::int64_t known_read = ns.end_read_ms.load(std::memory_order_acquire);
  const std::int64_t known_end = ns.end_ms.load(std::memory_order_acquire);
  if (known_end == 0 || news.read_ms / 1000 <= known_read / 1000 || news.end_ms / 1000 == known_end / 1000)
    return false;
  if (news.read_ms > now_ms + 60'000) return false;
  if (!ns.end_read_ms.compare_exchange_strong(known_read, news.read_ms, std::memory_order_acq_rel)) return false;
  ns.end_ms.store(news.end_ms, std::memory_order_release);
  const std::int64_t deadline = ns.deadline_ms.load(std::memory_order_acquire);
  if (deadline > 0) ns.deadline_ms.store(deadline + (news.end_ms - known_end), std::memory_order_release);
  notice_fields::changed(ns);
  if (was_end_ms != nullptr) *was_end_ms = known_end;
  return true;
}

void set_deadline(node_state& ns, std::int64_t deadline_ms) {
  ns.deadline_ms.store(deadline_ms, std::memory_order_release);
  notice_fields::changed(ns);
}

bool sane(const node_state& ns) { return ns.deadline_ms.load(std::memory_order_relaxed) >= 0; }

}  // namespace trainctl::deadline_fields
