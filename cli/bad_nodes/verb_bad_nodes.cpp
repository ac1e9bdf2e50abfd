// trainctl bad-nodes [list | mark NODE REASON... | forget NODE]: the bad-node memory,
// where a task of yours crashed, hung or straggled, that the next array task keeps off.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <string>
#include <vector>

#include "commands.hpp"
#include "env.hpp"
#include "env_names.hpp"
#include "verb_args.hpp"
#include "verbs.hpp"

namespace trainctl::cli {

namespace {}  // namespace

int verb_bad_nodes(int argc, char** argv) {
  CLI::App app{
      "The nodes your next array task keeps off (where a task of yours crashed, hung or straggled, or "
      "failed a health check), remembered per user.",
      "trainctl bad-nodes"};
  app.require_subcommand(0, 1);
  std::string expiry = env_or(env_var::kTrainctlBadNodeExpiry, "24h"), cap = env_or(env_var::kTrainctlBadNodeCap, "");
  auto* list = app.add_subcommand("list",
                                  "(the default) print them comma separated, for sbatch --exclude= or scontrol "
                                  "update ExcNodeList=; why, one line each, on stderr");
  bool json = false;
  for (CLI::App* a : {static_cast<CLI::App*>(&app), list}) {
    a->add_flag("--json", json, "the same as one JSON document: the nodes kept off, and every remembered one with why");
    a->add_option("--expiry", expiry, "forget a finding after this long (default 24h, $TRAINCTL_BAD_NODE_EXPIRY)");
    a->add_option("--cap", cap,
                  "at most this many (default: the partition's nodes minus the job's, $TRAINCTL_BAD_NODE_CAP)");
  }
  std::string node;
  std::vector<std::string> reason_words;
  auto* mark = app.add_subcommand("mark", "remember NODE as bad, with REASON (one line)");
  mark->add_option("NODE", node, "the node's SLURM name (letters, digits, '-', '_', '.')")->required();
  mark->add_option("REASON", reason_words, "why, e.g. the health check that failed")->required()->expected(-1);
  auto* forget = app.add_subcommand("forget", "forget every finding about NODE (repaired, or wrongly blamed)");
  forget->add_option("NODE", node, "the node's SLURM name")->required();
  if (const auto done = parse_verb(app, argc, argv, "bad-nodes")) return *done;
  if (mark->parsed()) {
    std::string reason;
    for (const auto& w : reason_words) reason += (reason.empty() ? "" : " ") + w;
    return commands::mark_bad_node("trainctl", "bad-nodes mark", node, reason);
  }
  if (forget->parsed()) return commands::forget_bad_node("trainctl", node);
  return commands::print_bad_nodes("trainctl", "--cap", expiry, cap, json);
}

}  // namespace trainctl::cli
