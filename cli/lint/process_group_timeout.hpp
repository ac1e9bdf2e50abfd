// The timeout a training program gives torch.distributed's process group, read from the
// program's text as written, never run: init_process_group(..., timeout=timedelta(minutes=5))
// (or datetime.timedelta). torch ends every rank when a collective waits that long, so a
// hang timeout past it would let torch kill the ranks before trainctl takes their stacks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "batch_script.hpp"
#include "lint_rules.hpp"

namespace trainctl {

struct program_timeout {
  int line = 0;          // 1-based line of the init_process_group call
  std::int64_t ms = -1;  // -1: a timeout is given, but not as a timedelta of plain numbers
};

// The shortest timeout the program's init_process_group calls give (the one that ends the
// ranks first), else the first that lint cannot read; nullopt when no call (outside a
// comment) gives one: torch's default for the backend applies.
std::optional<program_timeout> process_group_timeout(const std::string& python_text);

// For lint's rule when the user gave no --collective-timeout: the shortest timeout that
// script `s`'s Python programs (relative paths under `submit_dir`) give init_process_group,
// into ctx's collective_timeout_ms and _from ("train.py:88"), or where one could not be
// read (collective_timeout_unread). A program lint cannot read (missing, not a regular
// file) gives nothing.
void read_program_timeouts(const batch_script& s, const std::string& submit_dir, lint_context* ctx);

}  // namespace trainctl
