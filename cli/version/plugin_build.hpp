// Which trainctl plugin this node's SLURM loads, and which build it is: found through
// slurm.conf's PlugStackConfig and the plugstack.conf lines (and the files they include),
// and read from the plugin's file by the marker the plugin carries. The plugin is never
// loaded: it needs slurmstepd's symbols, and loading a file runs its code.
#pragma once

#include <string>

namespace trainctl::cli {

struct plugin_found {
  std::string conf;     // the plugstack.conf read ("" when slurm.conf could not be)
  std::string path;     // the plugin's file ("" when no line names trainctl_spank.so)
  std::string build;    // "VERSION/LAYOUT" (build_id.hpp); "" when not read
  std::string problem;  // why path or build is empty, for a person
};

// slurm_conf: the slurm.conf this node's SLURM reads ($SLURM_CONF, else /etc/slurm/slurm.conf).
plugin_found find_plugin(const std::string& slurm_conf);

}  // namespace trainctl::cli
