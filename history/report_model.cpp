#include "report_model.hpp"

#include <cstdio>

namespace trainctl {

std::string report_span(double s) {
  char out[32];
  if (s < 0) s = 0;
  if (s < 60)
    std::snprintf(out, sizeof out, "%.1fs", s);
  else if (s < 3600)
    std::snprintf(out, sizeof out, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else
    std::snprintf(out, sizeof out, "%dh%02dm", static_cast<int>(s) / 3600, static_cast<int>(s) / 60 % 60);
  return out;
}

}  // namespace trainctl
