// What every trainwatch check returns. Checks know nothing about sinks; the alert
// layer knows nothing about checks. Status follows the monitoring-plugins convention.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace trainctl {

enum status : int { kOk = 0, kWarning = 1, kCritical = 2, kUnknown = 3 };
const char* status_name(int s);
// The status a name gives, in any case ("critical", "CRITICAL"); -1 when none.
int parse_status(const std::string& name);

struct check_result {
  std::string check;   // "fs", "job-running", ...
  std::string target;  // what was checked: a path, a job name
  int status = kUnknown;
  std::string text;                                     // one line a person reads
  std::vector<std::pair<std::string, double>> figures;  // for the textfile
  // What the finding is about, for a site's alert routing (Alertmanager's labels):
  // "job" (the training job's name) and "node" where a check knows them.
  std::vector<std::pair<std::string, std::string>> labels;
};

// The worst status of several results (UNKNOWN ranks between WARNING and CRITICAL:
// "could not tell" is never reported as OK, nor raised to a false CRITICAL).
int worst_status(const std::vector<check_result>& results);

// This node's name (gethostname), "localhost" when it cannot be told: for alert texts,
// sender addresses and file names that must differ between nodes.
std::string host_name();

// `text` with every byte that is not part of valid UTF-8 written as \xHH: paths and job
// names may hold any bytes, JSON, mail and Prometheus text only UTF-8. The same input
// gives the same output, so it also serves as a key.
std::string json_safe(const std::string& text);

}  // namespace trainctl
