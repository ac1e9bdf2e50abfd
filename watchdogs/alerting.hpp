// From check results to delivered alerts: decide (fire, repeat, resolve) under the
// state directory's lock, put every alert to send in the spool first, then deliver
// the spool. An alert is removed from the spool only once a sink took it, so nothing
// is lost when a sink, the network or this process fails: delivery is at least once.
#pragma once

#include <string>
#include <vector>

#include "alert_state.hpp"
#include "check_result.hpp"
#include "sinks.hpp"

namespace trainctl {

struct alert_setup {
  std::vector<sink> sinks;
  alert_policy policy;
  delivery_options delivery;
  std::string state_dir;
  std::string textfile;  // Prometheus node_exporter textfile; empty: none
};

// Creates the state and spool directories and refuses them, or the --textfile's
// directory, when they are another user's or others can write them (throws, one line).
void check_state_dirs(const alert_setup& setup);
// Records the results, spools and delivers what they call for; returns how many
// spooled alerts are still undelivered. Problems are one line each on stderr.
int handle_results(const std::vector<check_result>& results, const alert_setup& setup);
// Delivers what earlier runs spooled; returns how many are still undelivered.
int flush_spool(const alert_setup& setup);
// The Prometheus text exposition of the results.
std::string textfile_text(const std::vector<check_result>& results);

}  // namespace trainctl
