// The deadline's fields of the node state and their rules, as code: the only place that
// reads or writes them (scripts/protocol_fields.py fails on a raw access elsewhere).
//
//   deadline_ms   unix ms at which every rank exits with a save; 0 none.
//                 Written by the supervisor as soon as it knows it (publish), by a rank
//                 that learnt a later EndTime in the agreement (learn: moved by as much
//                 as EndTime moved), and by the library's own private state when the
//                 shared one is damaged (rebuild). Read by the library's watcher and the
//                 publisher (they fire the deadline flag), the supervisor (a follower's
//                 wait, a takeover), the task's metrics and `trainctl status`.
//   end_ms        the job's EndTime (unix ms, 0 unknown) the deadline was computed from,
//   end_read_ms   and when that EndTime was read from the controller. They move only
//                 forward in read time: learn takes the pair with a compare-and-swap on
//                 end_read_ms, and publish never puts an older read over a newer one.
//
// Ordering: a writer stores end_ms, end_read_ms, deadline_ms with release and then bumps
// seq; a reader loads each with acquire. A reader may see a new deadline with the old
// EndTime for an instant: the deadline is what counts.
#pragma once

#include <cstdint>

#include "node_state.hpp"

namespace trainctl {

// An EndTime and when it was read (unix ms; 0: unknown).
struct end_read {
  std::int64_t end_ms = 0;
  std::int64_t read_ms = 0;
};

namespace deadline_fields {

std::int64_t deadline_ms(const node_state& ns);
end_read end_time(const node_state& ns);

// The supervisor's own read: its EndTime, when it read it, and the deadline it computed.
// False, and nothing written, when the node state holds a later read of another EndTime
// (a rank brought it from another node: the supervisor adopts it at its next wake).
bool publish(node_state& ns, std::int64_t deadline_ms, end_read read);

// A later EndTime from the agreement (another node's supervisor read it): taken when it
// was read after the node's own read, says another EndTime (to the second), and the node
// had an EndTime at all (no supervisor: no graceful exit to keep); a read more than a
// minute ahead of `now_ms` is a damaged state's, not news. The deadline moves by as much
// as EndTime moved. True when this call took it (exactly one of several racing ranks);
// *was_end_ms (may be null) gets the EndTime it replaced.
bool learn(node_state& ns, end_read news, std::int64_t now_ms, std::int64_t* was_end_ms = nullptr);

// A deadline of the process's own: the publisher's (a rank that publishes without a
// supervisor), or a private state rebuilt from a damaged shared one.
void set_deadline(node_state& ns, std::int64_t deadline_ms);

// Whether the deadline is one a writer could have left (not negative): part of damage().
bool sane(const node_state& ns);

}  // namespace deadline_fields
}  // namespace trainctl
