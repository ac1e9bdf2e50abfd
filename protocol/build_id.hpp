// Which build of trainctl a process is, as the parts on one node tell each other: the
// plugin (from a site's package), the supervisor (the site's or the user's trainctl-run)
// and a rank's library (often the user's wheel) are built apart, and share a node state
// only when they read one layout. A build is "VERSION/LAYOUT" (0.1.0/12).
#pragma once

#include <string>
#include <string_view>

#include "node_state.hpp"

#define TRAINCTL_BUILD_STR2(x) #x
#define TRAINCTL_BUILD_STR(x) TRAINCTL_BUILD_STR2(x)
// This build, as a literal: TRAINCTL_BUILD_VERSION comes from the project's version.
#define TRAINCTL_BUILD_TEXT TRAINCTL_BUILD_VERSION "/" TRAINCTL_BUILD_STR(TRAINCTL_NODE_STATE_LAYOUT)
// In the plugin's file, so that `trainctl version` reads it there without loading it.
#define TRAINCTL_PLUGIN_BUILD_MARKER "trainctl-plugin-build "

namespace trainctl {

// The supervisor's build, for its ranks; the plugin's, for the job's tasks.
inline constexpr char kSupervisorBuildVar[] = "TRAINCTL_SUPERVISOR_BUILD";
inline constexpr char kPluginBuildVar[] = "TRAINCTL_PLUGIN_BUILD";

struct build_id {
  std::string version;  // "0.1.0"
  int layout = 0;       // the node state's layout (node_state::kVersion)
};

build_id this_build();
// "VERSION/LAYOUT" as this module writes it; false for anything else (left unchanged).
bool parse_build(std::string_view text, build_id* out);
// "trainctl 0.1.0 (node-state layout 12)"
std::string describe(const build_id& b);
// One line for two builds that cannot share a node state ("" when they can): who is
// which, and what to install.
std::string layout_mismatch(const build_id& other, std::string_view other_is, std::string_view this_is);

}  // namespace trainctl
