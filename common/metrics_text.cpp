#include "metrics_text.hpp"

#include <cassert>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace trainctl {
namespace {

// "\" and newlines (and '"' in a label value) escaped, as both formats want them.
std::string escaped(const std::string& text, bool quote) {
  std::string out;
  for (const char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string value_text(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
  } else {
    // The shortest text that reads back as the same double: 0.25, not 0.25000000000000000.
    for (int digits = 1; digits <= 17; ++digits) {
      std::snprintf(buf, sizeof buf, "%.*g", digits, v);
      if (std::strtod(buf, nullptr) == v) break;
    }
  }
  return buf;
}

}  // namespace

bool valid_metric_name(const std::string& name, bool label) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) != 0) return false;
  for (const char c : name)
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '_' && (c != ':' || label)) return false;
  return true;
}

std::string metrics_text(const std::vector<metric_family>& families, metrics_format format) {
  std::string out;
  for (const metric_family& f : families) {
    if (f.samples.empty()) continue;
    assert(valid_metric_name(f.name, false));
    const bool counter = f.type == metric_type::counter;
    assert(!counter || (f.name.size() > 6 && f.name.compare(f.name.size() - 6, 6, "_total") == 0));
    // OpenMetrics names a counter's family without its samples' "_total".
    const std::string family =
        counter && format == metrics_format::openmetrics ? f.name.substr(0, f.name.size() - 6) : f.name;
    out += "# HELP " + family + " " + escaped(f.help, false) + "\n";
    out += "# TYPE " + family + (counter ? " counter\n" : " gauge\n");
    for (const metric_sample& s : f.samples) {
      out += f.name;
      if (!s.labels.empty()) {
        out += "{";
        for (std::size_t i = 0; i < s.labels.size(); ++i) {
          assert(valid_metric_name(s.labels[i].first, true));
          out += (i == 0 ? "" : ",") + s.labels[i].first + "=\"" + escaped(s.labels[i].second, true) + "\"";
        }
        out += "}";
      }
      out += " " + value_text(s.value) + "\n";
    }
  }
  if (format == metrics_format::openmetrics) out += "# EOF\n";
  return out;
}

}  // namespace trainctl
