// `trainctl report --format=openmetrics|prometheus`: the report's figures as metrics, one
// table of names (docs/metrics.md lists each). The supervisor's --metrics-dir file writes
// the rows that mean the same for one running task (task_metrics.hpp), from the same table.
#pragma once

#include <vector>

#include "metrics_text.hpp"
#include "report_model.hpp"

namespace trainctl {

// Every figure of `r` as a metric labelled with the job as asked (`slurm_job`).
std::vector<metric_family> run_report_metrics(const run_report& r);

// The figures a report of one running task alone tells as the whole job's report would
// (goodput, its node-seconds by cause, saves), labelled `labels`; not those that need the
// job's other tasks or its end (the queue, interruptions, stragglers' price, runs).
std::vector<metric_family> running_task_metrics(const run_report& r,
                                                const std::vector<std::pair<std::string, std::string>>& labels);

}  // namespace trainctl
