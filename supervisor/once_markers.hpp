// What happens once per job on a node, across the processes of its tasks and requeues:
// the --on-notice command per kind, the hold of an array, the preemption a later task
// end must not call a failure. A marker is a file "once.<key>" in the user's node state
// directory (state_dir()), made with an exclusive create; the node state's sweep
// removes a job's markers when the job ends on the node, and any older than a week.
#pragma once

#include <string>

namespace trainctl {

// Claims `name` ("once.<what>.<job>.<more>") for this user on this node: true for the
// first caller only. Throws runtime_error (one line) when the directory is refused.
bool claim_once(const std::string& name);
// Whether `name` was claimed (a regular file of this user); never throws.
bool was_claimed(const std::string& name);

}  // namespace trainctl
