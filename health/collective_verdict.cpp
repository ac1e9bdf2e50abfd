#include "collective_verdict.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <utility>

namespace trainctl {
namespace {

// "rank 2", "ranks 0,1,3"
std::string ranks_text(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
  return out;
}

// `caller`: the program's frame of the group's first rank, where the recorder has no stack.
std::string waiting_in(const std::vector<int>& ranks, const recorded_collective& c, const std::string& caller) {
  const std::string at = c.at != "?" && !c.at.empty() ? c.at : caller;
  return ranks_text(ranks) + (ranks.size() == 1 ? " waits in " : " wait in ") + c.op + " #" + std::to_string(c.seq) +
         " (" + c.in + (at.empty() ? "" : ", issued at " + at) + ")";
}

using signature = std::pair<std::string, std::string>;  // op, what it was given

struct group_of_ranks {
  std::vector<int> ranks;
  recorded_collective first;  // the lowest rank's record
};

// The collectives of one process group, rank by rank, read into one sentence.
std::string verdict_in_group(const std::map<int, recorded_collective>& recs, const std::map<int, std::string>& frames,
                             const std::map<int, std::string>& callers) {
  long long newest = 0;
  for (const auto& [rank, c] : recs) newest = std::max(newest, c.seq);
  std::map<signature, group_of_ranks> at_newest;
  std::vector<int> behind;
  for (const auto& [rank, c] : recs) {
    if (c.seq < newest) {
      behind.push_back(rank);
      continue;
    }
    auto& g = at_newest[{c.op, c.in}];
    if (g.ranks.empty()) g.first = c;
    g.ranks.push_back(rank);
  }
  const group_of_ranks* most = nullptr;
  bool tied = false;
  for (const auto& [sig, g] : at_newest) {
    if (most != nullptr && g.ranks.size() == most->ranks.size()) tied = true;
    if (most == nullptr || g.ranks.size() > most->ranks.size()) {
      most = &g;
      tied = false;
    }
  }
  std::vector<std::string> parts;
  const std::string n = "#" + std::to_string(newest);
  if (tied) {
    std::string all;
    for (const auto& [sig, g] : at_newest)
      all += (all.empty() ? "" : ", ") + ranks_text(g.ranks) + " " + sig.first + " (" + sig.second + ")";
    parts.push_back("the ranks disagree on collective " + n + ": " + all);
  } else if (most->first.done && behind.empty() && at_newest.size() == 1) {
    return "no rank waits in a collective: the newest, " + most->first.op + " " + n +
           ", completed on every rank, so the ranks are held in their own code";
  } else {
    const auto caller = callers.find(most->ranks.front());
    std::string lead = waiting_in(most->ranks, most->first, caller == callers.end() ? "" : caller->second);
    if (behind.empty() && at_newest.size() == 1)
      lead += ": every rank entered it and it does not complete (no rank is behind or in another collective)";
    parts.push_back(lead);
    for (const auto& [sig, g] : at_newest) {
      if (&g == most) continue;
      if (sig.first != most->first.op)
        parts.push_back(ranks_text(g.ranks) + " entered " + sig.first + " " + n + " while the others entered " +
                        most->first.op);
      else
        parts.push_back(ranks_text(g.ranks) + " entered " + sig.first + " " + n + " with " + sig.second +
                        " while the others passed " + most->first.in);
    }
  }
  for (int rank : behind) {
    const auto f = frames.find(rank);
    parts.push_back("rank " + std::to_string(rank) + "'s last collective is #" + std::to_string(recs.at(rank).seq) +
                    ": it never entered " + n + " (its stack: " + (f == frames.end() ? "?" : f->second) + ")");
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

}  // namespace

bool parse_recorded_collective(const std::string& line, recorded_collective* out) {
  if (line.compare(0, 3, "pg=") != 0) return false;
  recorded_collective c;
  const size_t in = line.find(" in=");
  if (in == std::string::npos) return false;
  c.in = line.substr(in + 4);
  std::istringstream words(line.substr(0, in));
  int seen = 0;
  for (std::string w; words >> w;) {
    const size_t eq = w.find('=');
    if (eq == std::string::npos) return false;
    const std::string key = w.substr(0, eq), value = w.substr(eq + 1);
    char* end = nullptr;
    if (key == "pg" || key == "seq" || key == "done") {
      const long long v = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end != '\0' || v < 0) return false;
      if (key == "pg") c.pg = static_cast<int>(v);
      if (key == "seq") c.seq = v;
      if (key == "done") c.done = v != 0;
    } else if (key == "op") {
      c.op = value;
    } else if (key == "at") {
      c.at = value;
    } else {
      continue;  // a field a newer package adds
    }
    ++seen;
  }
  if (seen != 5) return false;
  *out = c;
  return true;
}

std::string collective_verdict(const std::vector<rank_stack>& stacks) {
  std::map<int, std::map<int, recorded_collective>> by_group;
  std::map<int, std::string> frames, callers;
  std::vector<int> without;
  std::string none_why;
  int asked = 0;
  for (const auto& s : stacks) {
    if (s.collectives.empty()) continue;
    ++asked;
    frames[s.rank] = s.frame;
    if (!s.caller.empty()) callers[s.rank] = s.caller;
    bool any = false;
    for (const auto& line : s.collectives) {
      recorded_collective c;
      if (parse_recorded_collective(line, &c)) {
        by_group[c.pg][s.rank] = c;
        any = true;
      } else if (line.compare(0, 5, "none ") == 0 && none_why.empty()) {
        none_why = line.substr(5);
      }
    }
    if (!any) without.push_back(s.rank);
  }
  if (asked == 0) return "";
  if (by_group.empty())
    return (none_why.compare(0, 23, "the rank did not answer") == 0 ? "no rank's flight recorder answered ("
                                                                    : "no flight recorder was available (") +
           none_why + ")";
  // The first group in which something has not completed; else the default group.
  auto group = by_group.begin();
  for (auto g = by_group.begin(); g != by_group.end(); ++g)
    if (std::any_of(g->second.begin(), g->second.end(), [](const auto& rc) { return !rc.second.done; })) {
      group = g;
      break;
    }
  std::string out = verdict_in_group(group->second, frames, callers);
  if (!without.empty()) out += "; no flight recorder from " + ranks_text(without) + " (" + none_why + ")";
  return out;
}

std::string with_collectives(const std::string& summary, const std::vector<rank_stack>& stacks) {
  const std::string collectives = collective_verdict(stacks);
  return collectives.empty() ? summary : summary + "; flight recorder: " + collectives;
}

}  // namespace trainctl
