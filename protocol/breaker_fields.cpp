#include "breaker_fields.hpp"

namespace trainctl::breaker_fields {

void arm(node_state& ns, std::int64_t step, std::int32_t runs) {
  ns.breaker.runs.store(runs, std::memory_order_relaxed);
  ns.breaker.step1.store(step + 1, std::memory_order_release);
  notice_fields::changed(ns);
}

}  // namespace trainctl::breaker_fields
