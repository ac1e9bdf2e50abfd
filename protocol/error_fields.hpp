// The error a rank is dying of, a field of its heartbeat slot, and its rules as code: the
// only place that reads or writes it (scripts/protocol_fields.py fails on a raw access
// elsewhere).
//
//   error, error_len  the error as the rank's loop said it (an uncaught Python
//                     exception's last line: the package's excepthook): the text,
//                     printable ASCII, then its length with release. Written once: a
//                     second error keeps the first, the one the rank is dying of. A rank
//                     that noted one keeps its slot at its end, so that its supervisor
//                     reads it when it sees the death (crash finding, run events).
#pragma once

#include <cstddef>
#include <string>

#include "node_state.hpp"

namespace trainctl {

// `text`'s first line as one line a terminal shows as it is: printable ASCII, anything
// else '?', at most `max` characters.
std::string printable_line(const std::string& text, std::size_t max);

namespace error_fields {

void note(rank_beat& b, const std::string& text);
std::string read(const rank_beat& b);  // "" none
bool noted(const rank_beat& b);
// A new process's slot starts with none (beat_fields::claim).
void clear(rank_beat& b);

}  // namespace error_fields
}  // namespace trainctl
