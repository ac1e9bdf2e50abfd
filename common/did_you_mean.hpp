// "Did you mean": the accepted word closest to a mistyped one, as git, kubectl and
// GNU getopt_long suggest, for trainctl's verbs, trainctl-run's and trainwatch's flags,
// and trainwatch's checks.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace trainctl {

// Edits that turn `a` into `b`: an inserted, removed or replaced character, or two
// neighbours swapped, each counts one.
int edit_distance(std::string_view a, std::string_view b);

// The word of `accepted` that `typed` most likely meant, or "" when none is close enough
// to say so: the nearest within 2 edits (and at most one edit per 2 characters typed), else the
// only word that `typed` (3 characters or more) begins. Ties go to the earlier word.
std::string closest_word(std::string_view typed, const std::vector<std::string>& accepted);

}  // namespace trainctl
