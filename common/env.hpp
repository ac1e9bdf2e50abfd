// The process environment, read one way everywhere: a variable's text, "" when unset.
#pragma once

#include <cstdlib>
#include <string>

namespace trainctl {

inline std::string env_text(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

}  // namespace trainctl
