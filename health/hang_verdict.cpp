#include "hang_verdict.hpp"

#include <algorithm>
#include <map>

#include "node_names.hpp"

namespace trainctl {

namespace {
// The frame most ranks are in, how many are in it, how many frames there are, and
// whether another frame holds as many ranks.
struct common_frame {
  std::string frame;
  std::size_t ranks = 0, frames = 0;
  bool tied = false;
};
common_frame most_common_frame(const std::vector<rank_stack>& stacks) {
  std::map<std::string, std::size_t> by_frame;
  for (const auto& s : stacks) ++by_frame[s.frame];
  common_frame most;
  most.frames = by_frame.size();
  for (const auto& [frame, n] : by_frame) {
    if (n == most.ranks) most.tied = true;
    if (n > most.ranks) most = {frame, n, by_frame.size(), false};
  }
  return most;
}
}  // namespace

std::string summarize(const std::vector<rank_stack>& stacks) {
  if (stacks.empty()) return "no rank processes found";
  const auto [common, n, frames, tied] = most_common_frame(stacks);
  if (tied) {
    // Two frames hold as many ranks each (1 and 1 of a 2-rank job): none is the odd one
    // out, and naming one group "elsewhere" would blame whichever frame sorts last.
    std::vector<const rank_stack*> by_rank;
    by_rank.reserve(stacks.size());
    for (const auto& s : stacks) by_rank.push_back(&s);
    std::sort(by_rank.begin(), by_rank.end(),
              [](const rank_stack* a, const rank_stack* b) { return a->rank < b->rank; });
    std::string out = std::to_string(stacks.size()) + " ranks in " + std::to_string(frames) + kNoOddOneOut;
    for (size_t i = 0; i < by_rank.size(); ++i)
      out += (i ? "; " : "") + std::string("rank ") + std::to_string(by_rank[i]->rank) + " on " + by_rank[i]->host +
             " in " + by_rank[i]->frame;
    return out;
  }
  std::string out = std::to_string(n) + " of " + std::to_string(stacks.size()) + " ranks in " + common;
  std::vector<std::string> differ;
  for (const auto& s : stacks)
    if (s.frame != common) differ.push_back("rank " + std::to_string(s.rank) + " on " + s.host + " in " + s.frame);
  std::sort(differ.begin(), differ.end());
  if (!differ.empty()) {
    out += "; elsewhere: ";
    for (size_t i = 0; i < differ.size(); ++i) out += (i ? ", " : "") + differ[i];
  }
  return out;
}

namespace {
struct host_ranks {
  std::size_t ranks = 0, elsewhere = 0;
  bool in_kernel = false;  // a rank elsewhere waits in the kernel
};
// Per node, its ranks and those elsewhere than most; empty when there is no clear odd one out.
std::map<std::string, host_ranks> odd_hosts(const std::vector<rank_stack>& stacks) {
  const common_frame most = most_common_frame(stacks);
  std::map<std::string, host_ranks> hosts;
  if (2 * (stacks.size() - most.ranks) >= stacks.size()) return hosts;
  for (const auto& s : stacks) {
    if (!valid_node_name(s.host)) continue;
    host_ranks& h = hosts[s.host];
    ++h.ranks;
    if (s.frame == most.frame) continue;
    ++h.elsewhere;
    h.in_kernel = h.in_kernel || s.state == 'D';
  }
  return hosts;
}
}  // namespace

std::map<std::string, std::string> suspect_hosts(const std::vector<rank_stack>& stacks) {
  std::map<std::string, std::string> out;
  for (const auto& [host, h] : odd_hosts(stacks)) {
    if (h.in_kernel)
      out[host] = "holds a rank stuck in the kernel (a device or a filesystem) while most wait elsewhere";
    else if (h.ranks >= 2 && h.elsewhere == h.ranks)
      out[host] = "all " + std::to_string(h.ranks) + " of its ranks stuck elsewhere than most";
  }
  return out;
}

std::set<std::string> unblamed_hosts(const std::vector<rank_stack>& stacks) {
  const auto blamed = suspect_hosts(stacks);
  std::set<std::string> out;
  for (const auto& [host, h] : odd_hosts(stacks))
    if (h.elsewhere > 0 && blamed.count(host) == 0) out.insert(host);
  return out;
}

}  // namespace trainctl
