#include "query_schedule.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <ctime>

#include "env.hpp"
#include "env_names.hpp"
#include "parse.hpp"

namespace trainctl {
namespace {

// A count from the task's environment, through the project's one integer parser;
// `fallback` when unset or nonsense.
std::int64_t env_number(const char* name, std::int64_t fallback) {
  const std::string v = env_text(name);
  if (v.empty()) return fallback;
  try {
    return parse_int(v, 0, 999999);
  } catch (const parse_error&) {
    return fallback;
  }
}

std::uint64_t next_random(std::uint64_t& x) {  // xorshift64*
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  return x * 0x2545F4914F6CDD1DULL;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

std::int64_t cycle(const query_slots& s) {
  return std::min<std::int64_t>(std::max<std::int64_t>(s.nodes, 1), kMaxOwnCycle);
}

}  // namespace

query_slots slots_from_env(const std::string& job_id) {
  query_slots s;
  std::uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : job_id) h = (h ^ c) * 1099511628211ULL;
  s.job_hash = h;
  s.nodes = std::max<std::int64_t>(1, env_number(env_var::kSlurmJobNumNodes, env_number(env_var::kSlurmNnodes, 1)));
  s.node = env_number(env_var::kSlurmNodeid, 0) % s.nodes;
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  s.seed = (static_cast<std::uint64_t>(getpid()) << 32) ^ static_cast<std::uint64_t>(ts.tv_nsec) ^ h;
  if (s.seed == 0) s.seed = 1;
  return s;
}

std::int64_t own_cycle_ms(const query_slots& s) { return cycle(s) * 1000; }

std::int64_t in_own_second(query_slots& s, std::int64_t t_ms) {
  const std::int64_t m = cycle(s);
  std::int64_t sec = floor_div(t_ms + 999, 1000);  // the first whole second at or after t
  const std::int64_t h = static_cast<std::int64_t>(s.job_hash % static_cast<std::uint64_t>(m));
  const std::int64_t at = ((sec - h) % m + m) % m;
  sec += ((s.node % m) - at + m) % m;
  // A random moment in its first half: other jobs' nodes do not line up at :000, and a
  // supervisor that wakes late (a busy node) still asks within its own second.
  return sec * 1000 + static_cast<std::int64_t>(next_random(s.seed) % 500);
}

std::int64_t next_periodic_ms(query_slots& s, std::int64_t period_ms, std::int64_t not_before_ms) {
  if (period_ms <= 0) return in_own_second(s, not_before_ms);
  const std::int64_t point = static_cast<std::int64_t>((s.job_hash / 61) % static_cast<std::uint64_t>(period_ms)) +
                             s.node * (period_ms / s.nodes);
  std::int64_t t = floor_div(not_before_ms - point, period_ms) * period_ms + point;
  if (t < not_before_ms) t += period_ms;
  return in_own_second(s, t);
}

}  // namespace trainctl
