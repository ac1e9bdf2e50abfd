#include "graceful_auto.hpp"

#include <algorithm>
#include <utility>

namespace trainctl {

graceful_auto::graceful_auto(const std::string& key, const std::string& job_name, std::string job, std::string node,
                             std::string* problem)
    : path_(save_times_path(key)), job_(std::move(job)), node_(std::move(node)) {
  if (path_.empty()) {
    *problem = "no place for save times (job id '" + key + "', TRAINCTL_SAVE_TIMES_DIR, HOME)";
    return;
  }
  longest_ms_ = longest_recorded_save_ms(path_, problem);
  recorded_ms_ = longest_ms_;
  const std::string by_name = save_times_path_for_name(job_name);
  if (!by_name.empty()) {
    std::string ignored;  // a drill's file that cannot be read is no problem of this run
    longest_ms_ = std::max(longest_ms_, longest_recorded_save_ms(by_name, &ignored));
  }
}

bool graceful_auto::saw(std::int64_t save_ms, bool record, std::string* problem) {
  const bool longer = save_ms > longest_ms_;
  if (longer) longest_ms_ = save_ms;
  if (record && !path_.empty() && longest_ms_ > recorded_ms_) {
    *problem = record_save_time(path_, job_, node_, longest_ms_);
    recorded_ms_ = longest_ms_;  // tried once: a store that refuses is said once, not at every wake
  }
  return longer;
}

}  // namespace trainctl
