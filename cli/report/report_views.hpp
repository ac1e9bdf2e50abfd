// What `trainctl report` shows of a run_report (history/run_report.hpp): the text a person
// reads, the JSON (schema 1) and the timeline as a standalone SVG document.
#pragma once

#include <string>

#include "run_report.hpp"

namespace trainctl {

std::string run_report_text(const run_report& r);
std::string run_report_json(const run_report& r);
std::string run_report_svg(const run_report& r);

}  // namespace trainctl
