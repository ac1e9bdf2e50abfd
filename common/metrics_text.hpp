// Metrics in the text formats Prometheus reads: its own exposition format (0.0.4: what
// node_exporter's textfile collector and `promtool check metrics` read) and OpenMetrics
// 1.0 (`trainctl report --format=openmetrics`). Written by trainctl's own code rather
// than prometheus-cpp: the same few lines serve the login node's verbs, the supervisor
// and the wheel built on Debian 11, with no library to ship (design.md, Metrics).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace trainctl {

enum class metric_type { gauge, counter };
enum class metrics_format { prometheus, openmetrics };

struct metric_sample {
  std::vector<std::pair<std::string, std::string>> labels;  // name (a constant of the code), value (any text)
  double value = 0;
};

// One metric: its name as its samples carry it (a counter's ends in "_total", which
// OpenMetrics' TYPE and HELP lines leave off), its type, one line of help, its samples.
struct metric_family {
  std::string name;
  metric_type type = metric_type::gauge;
  std::string help;
  std::vector<metric_sample> samples;
};

// The families in `format`: HELP and TYPE before each family's samples (a family without
// samples is left out), label values escaped, OpenMetrics ending in "# EOF".
std::string metrics_text(const std::vector<metric_family>& families, metrics_format format);

// Whether `name` can name a metric or a label: [a-zA-Z_:][a-zA-Z0-9_:]* (':' not in labels).
bool valid_metric_name(const std::string& name, bool label);

}  // namespace trainctl
