#include "publisher_fields.hpp"

#include <signal.h>

#include <algorithm>
#include <cerrno>

namespace trainctl {
namespace publisher_fields {

std::uint64_t holder(const node_state& ns) { return ns.publisher_id.load(std::memory_order_acquire); }

bool take(node_state& ns, std::uint64_t from, std::uint64_t mine, std::int64_t now_ms) {
  if (!ns.publisher_id.compare_exchange_strong(from, mine, std::memory_order_acq_rel)) return false;
  ns.published_ms.store(now_ms, std::memory_order_release);
  ns.supervised.store(0, std::memory_order_relaxed);
  return true;
}

void give_back(node_state& ns, std::uint64_t mine) {
  if (holder(ns) != mine) return;
  ns.supervised.store(0, std::memory_order_relaxed);
  ns.publisher_id.compare_exchange_strong(mine, 0, std::memory_order_acq_rel);
}

void beat(node_state& ns, std::int64_t now_ms) { ns.published_ms.store(now_ms, std::memory_order_release); }

std::int64_t beat_ms(const node_state& ns) { return ns.published_ms.load(std::memory_order_acquire); }

void set_interval(node_state& ns, std::int32_t every_ms) {
  ns.publish_every_ms.store(every_ms, std::memory_order_relaxed);
}

void set_supervised(node_state& ns) { ns.supervised.store(1, std::memory_order_release); }

bool supervised(const node_state& ns) { return ns.supervised.load(std::memory_order_acquire) == 1; }

void count_stat(node_state& ns) { ns.stat_calls.fetch_add(1, std::memory_order_relaxed); }

std::uint64_t stat_calls(const node_state& ns) { return ns.stat_calls.load(std::memory_order_relaxed); }

std::int32_t interval_ms(const node_state& ns) { return ns.publish_every_ms.load(std::memory_order_relaxed); }

bool sane(const node_state& ns) {
  const std::int32_t s = ns.supervised.load(std::memory_order_relaxed);
  return s >= 0 && s <= 1 && ns.publish_every_ms.load(std::memory_order_relaxed) >= 0;
}

}  // namespace publisher_fields

namespace {
bool alive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno != ESRCH); }
}  // namespace

bool publisher_stale(const node_state& ns, std::int64_t now_ms, std::int64_t stale_ms) {
  const std::uint64_t id = publisher_fields::holder(ns);
  if (id == 0 || !alive(publisher_fields::holder_pid(id))) return true;
  return stale_ms > 0 && now_ms - publisher_fields::beat_ms(ns) > stale_ms;
}

std::int64_t publisher_stale_after_ms(const node_state& ns) {
  const std::int64_t every = publisher_fields::interval_ms(ns);
  // A heartbeat every second (or faster): 4 s without one, a stall no healthy holder has
  // (its loop never blocks), and a takeover within one default poll interval. A holder
  // that advertises a longer interval (a trainctl before the heartbeat, whose publisher
  // refreshed at each poll) keeps two of them and a second.
  if (every > 0 && every <= 1000) return std::max<std::int64_t>(3000, 3 * every + 1000);
  return std::max<std::int64_t>(3000, 2 * (every > 0 ? every : 10000) + 1000);
}

}  // namespace trainctl
