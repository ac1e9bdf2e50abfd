// The process environment, read one way everywhere: a variable's text, "" when unset.
#pragma once

#include <cstdlib>
#include <functional>
#include <string>

namespace trainctl {

inline std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// A variable's text, or `fallback` when it is unset or empty.
inline std::string env_or(const char* name, const std::string& fallback) {
  const std::string v = env_text(name);
  return v.empty() ? fallback : v;
}

// Where code also runs with another environment than its own (the plugin reads the
// job's through spank_getenv): a variable's text, "" when unset. env_text is one.
using env_lookup = std::function<std::string(const char*)>;

}  // namespace trainctl
