// What a node is called: this one as SLURM names it, and whether a text can be one
// node's name (what bad-node records, stack files, run events and reports call a node).
#pragma once

#include <string>

namespace trainctl {

// This node as SLURM names it (SLURMD_NODENAME, which differs where nodes share a
// host), else the host name: what bad-node records, stack files and reports call it.
std::string node_name();

// Whether `name` can be one SLURM node's name: letters, digits, '-', '_' and '.', at
// most 64 characters. No brackets, commas or white space: a hostlist expression such
// as n[1-3] names many nodes and is never one.
bool valid_node_name(const std::string& name);

}  // namespace trainctl
