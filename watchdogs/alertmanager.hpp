// What trainwatch tells Alertmanager (its API v2, POST /api/v2/alerts): one alert per
// (check, target), identified by its labels, so that a site routes, groups and silences
// trainwatch's findings as it does Prometheus' own.
//
// Labels: alertname (trainwatch_<check>), check, target, severity (warning, critical,
// unknown), user (who runs trainwatch), instance (the host it runs on), and the check's
// own: job (the training job's name), node. A FIRING or REPEAT is valid until its
// `expires` (twice --repeat, an hour at least): an alert trainwatch stops repeating (its
// cron job gone) ends by itself. Alertmanager tells alerts apart by their labels, severity among them:
// an alert of a new severity ends the one sent before it (alert_entry::sent_status), and
// RESOLVED ends the last one sent, so a finding that went from WARNING to CRITICAL, or
// cleared, leaves no alert behind.
#pragma once

#include <cstdint>
#include <string>

#include "alert_message.hpp"

namespace trainctl {

// The JSON array POSTed for one message.
std::string alertmanager_payload(const alert_message& m);
// The alerts endpoint of an Alertmanager at `base` (http(s)://host:port[/prefix][/]).
std::string alertmanager_alerts_url(const std::string& base);
// RFC 3339 in UTC, as Alertmanager reads times: 2026-12-02T18:53:19Z.
std::string rfc3339_utc(std::int64_t unix_s);

}  // namespace trainctl
