// The process environment, read one way everywhere: a variable's text, "" when unset.
// The only place trainctl calls getenv (scripts/lint fails on another).
#pragma once

#include <cstdlib>
#include <functional>
#include <string>

namespace trainctl {

inline std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// Whether the variable is set at all (an empty value included): for the few that mean
// something by being there (LOCAL_RANK under torchrun, a test's switch).
inline bool env_set(const char* name) { return std::getenv(name) != nullptr; }

// A variable's text, or `fallback` when it is unset or empty.
inline std::string env_or(const char* name, const std::string& fallback) {
  const std::string v = env_text(name);
  return v.empty() ? fallback : v;
}

// Where code also runs with another environment than its own (the plugin reads the
// job's through spank_getenv): a variable's text, "" when unset. env_text is one.
using env_lookup = std::function<std::string(const char*)>;

}  // namespace trainctl
