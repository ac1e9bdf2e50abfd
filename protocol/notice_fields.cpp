#include "notice_fields.hpp"

namespace trainctl::notice_fields {

void raise(node_state& ns, std::uint32_t bits) {
  ns.flags.fetch_or(bits, std::memory_order_release);
  changed(ns);
}

bool set(node_state& ns, std::uint32_t bit, bool on) {
  const std::uint32_t before =
      on ? ns.flags.fetch_or(bit, std::memory_order_release) : ns.flags.fetch_and(~bit, std::memory_order_release);
  return ((before & bit) != 0) != on;
}

void changed(node_state& ns) { ns.seq.fetch_add(1, std::memory_order_release); }

std::uint32_t seq(const node_state& ns) { return ns.seq.load(std::memory_order_acquire); }

bool sane(const node_state& ns) { return (ns.flags.load(std::memory_order_relaxed) & ~kKnownFlags) == 0; }

}  // namespace trainctl::notice_fields
