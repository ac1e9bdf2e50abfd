// trainwatch memory --job NAME: the training job's own memory on each of its nodes,
// not that of the cron job that runs the check (which lands on whatever node is free).
#include <sstream>

#include "checks.hpp"
#include "node_names.hpp"
#include "parse.hpp"

namespace trainctl {

std::string memory_here_line(const memory_reading& m) {
  return node_name() + " " + std::to_string(m.used) + " " + std::to_string(m.limit) + " " + m.source + "\n";
}

std::vector<check_result> judge_job_memory(const std::string& name, const std::string& job, int nodes,
                                           const std::string& here_lines, const memory_options& o,
                                           const std::string& state_dir) {
  std::vector<check_result> out;
  std::istringstream lines(here_lines);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream in(line);
    std::string node, used, limit, source;
    in >> node >> used >> limit;
    std::getline(in >> std::ws, source);
    // The helper's words become an alert's target: one node's name and numbers only.
    if (!valid_node_name(node) || !all_digits(used, 20) || !all_digits(limit, 20) || limit == "0") continue;
    memory_reading m;
    m.used = std::stoull(used);
    m.limit = std::stoull(limit);
    m.source = source.empty() || source.size() > 200 ? "node" : source;
    check_result r = judge_memory(m, o, state_dir, name + " on " + node);
    r.text = name + " on " + node + " (job " + job + "): " + r.text;
    r.labels = {{"job", name}, {"node", node}};
    out.push_back(std::move(r));
  }
  if (static_cast<int>(out.size()) < nodes) {
    check_result r;
    r.check = "memory";
    r.target = name;
    r.labels = {{"job", name}};
    r.status = kUnknown;
    r.text = "job " + job + ": no reading from " + std::to_string(nodes - static_cast<int>(out.size())) + " of its " +
             std::to_string(nodes) + " nodes";
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace trainctl
