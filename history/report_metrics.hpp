// `trainctl report --format=openmetrics|prometheus`: the report's figures as metrics, one
// table of names (docs/metrics.md lists each). The supervisor's textfile for
// node_exporter is to use the same names for the same figures.
#pragma once

#include <vector>

#include "metrics_text.hpp"
#include "run_report.hpp"

namespace trainctl {

// Every figure of `r` as a metric labelled with the job as asked (`job`).
std::vector<metric_family> run_report_metrics(const run_report& r);

}  // namespace trainctl
