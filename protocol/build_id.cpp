#include "build_id.hpp"

#include <cctype>

namespace trainctl {

build_id this_build() { return {TRAINCTL_BUILD_VERSION, static_cast<int>(node_state::kVersion)}; }

bool parse_build(std::string_view text, build_id* out) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash > 32 || text.size() - slash - 1 > 6 ||
      slash + 1 == text.size())
    return false;
  const std::string_view version = text.substr(0, slash), layout = text.substr(slash + 1);
  for (const char c : version)
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.') return false;
  int n = 0;
  for (const char c : layout) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    n = n * 10 + (c - '0');
  }
  out->version = std::string(version);
  out->layout = n;
  return true;
}

std::string describe(const build_id& b) {
  return "trainctl " + b.version + " (node-state layout " + std::to_string(b.layout) + ")";
}

std::string layout_mismatch(const build_id& other, std::string_view other_is, std::string_view this_is) {
  const build_id self = this_build();
  if (other.layout == self.layout) return "";
  const build_id& newer = other.layout > self.layout ? other : self;
  return std::string(other_is) + " is " + describe(other) + " and " + std::string(this_is) + " " + describe(self) +
         ": they cannot share the node state; install one version for both (the newer is " + newer.version +
         "; docs/admins.md, Versions and upgrading)";
}

}  // namespace trainctl
