#include "query_schedule.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ctime>

namespace trainctl {
namespace {

std::int64_t env_number(const char* name, std::int64_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long long n = std::strtoll(v, &end, 10);
  return end != v && *end == '\0' && errno == 0 && n >= 0 && n < 1000000 ? n : fallback;
}

std::uint64_t next_random(std::uint64_t& x) {  // xorshift64*
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  return x * 0x2545F4914F6CDD1DULL;
}

}  // namespace

query_slots slots_from_env(const std::string& job_id) {
  query_slots s;
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : job_id) h = (h ^ c) * 1099511628211ULL;
  s.job_hash = h;
  s.nodes = std::max<std::int64_t>(1, env_number("SLURM_JOB_NUM_NODES", env_number("SLURM_NNODES", 1)));
  s.node = env_number("SLURM_NODEID", 0);
  if (s.node >= s.nodes) s.node %= s.nodes;
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  s.seed = (static_cast<std::uint64_t>(getpid()) << 32) ^ static_cast<std::uint64_t>(ts.tv_nsec) ^ h;
  if (s.seed == 0) s.seed = 1;
  return s;
}

std::int64_t slot_offset_ms(query_slots& s, std::int64_t window_ms) {
  if (window_ms <= 0) return 0;
  const std::int64_t width = window_ms / s.nodes;
  const std::int64_t base = static_cast<std::int64_t>(s.job_hash % static_cast<std::uint64_t>(window_ms));
  std::int64_t offset = base + s.node * width;
  // Jitter inside the slot, short of its last second: the next node's read is then at
  // least a second later whatever both drew.
  if (width > 1000) offset += static_cast<std::int64_t>(next_random(s.seed) % static_cast<std::uint64_t>(width - 1000));
  return offset % window_ms;
}

std::int64_t next_slot_ms(query_slots& s, std::int64_t window_ms, std::int64_t not_before_ms) {
  if (window_ms <= 0) return not_before_ms;
  const std::int64_t offset = slot_offset_ms(s, window_ms);
  const std::int64_t start = not_before_ms - not_before_ms % window_ms + offset;
  return start >= not_before_ms ? start : start + window_ms;
}

std::int64_t spread_window_ms(const query_slots& s, std::int64_t period_ms) {
  return std::min(period_ms, std::clamp<std::int64_t>(2000 * s.nodes, 6000, 60000));
}

}  // namespace trainctl
