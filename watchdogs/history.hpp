// Figures kept between runs in the state directory, for trends: the runway of a
// filesystem, the growth of a job's memory. One small file per (check, target).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace trainctl {

std::string history_file(const std::string& state_dir, const std::string& check, const std::string& target);
// Appends (now, value) to the file and returns the last day of points (at most 500).
std::vector<std::pair<double, double>> record_history(const std::string& file, double now, double value);

}  // namespace trainctl
