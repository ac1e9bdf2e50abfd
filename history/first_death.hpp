// The first rank death of a task, for `trainctl report`: of each node's first death (its
// supervisor's `death` event), which came first and by how much, and the clause of the
// task's detail line that names it.
#pragma once

#include <string>
#include <vector>

#include "report_model.hpp"

namespace trainctl {

// The earliest of `deaths` (each node's first rank death of its own), its error and its
// lead over the next node's, into t.first_death. When the earliest died of a closed
// connection (a peer's end) and another node's rank died of its own cause within a
// teardown after it, that rank is named and the earlier one kept as lost_peer.
void first_death_of(task_report& t, const std::vector<const run_event*>& deaths);

// " rank 3 on n2 died first (exit status 1), 59 ms before the next node's: `...`;" ("" none).
std::string first_death_clause(const task_report::death& d);

}  // namespace trainctl
