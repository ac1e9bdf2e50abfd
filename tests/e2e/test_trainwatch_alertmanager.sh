#!/usr/bin/env bash
# trainwatch's alerts in a real Alertmanager (Debian's, on loopback, API v2): a failing
# check is one active alert with the labels a site routes on (alertname, check, target,
# severity, user, instance; job for a job's check); a worse status replaces it; RESOLVED
# ends it. With Alertmanager stopped the alert is kept in the spool and sent by the next
# run once it is back, nothing lost. The sink from a config file's notify list too; a bad
# address is one line and exit 3, nothing sent.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
TW=$BUILD/bin/trainwatch
start_alertmanager
state=$TEST_DIR/state
data=$TEST_DIR/data
mkdir -p "$data"
am=(--state-dir "$state" --notify "alertmanager:$AM_URL" --delivery-timeout 3s)
# active: one line per active alert in Alertmanager, "label=value ..." sorted by name.
active() {
  curl -sf --max-time 5 "$AM_URL/api/v2/alerts?active=true&silenced=false&inhibited=false" | python3 -c '
import json, sys
for a in json.load(sys.stdin):
    if a["status"]["state"] == "active":
        print(" ".join("%s=%s" % kv for kv in sorted(a["labels"].items())))'
}
n_active() { active | grep -c . || true; }
one_active() { [ "$(n_active)" = 1 ]; }
none_active() { [ "$(n_active)" = 0 ]; }

log "1. the fs check warns: one alert, its labels"
rc=0
"$TW" fs --path "$data" --warn-free 1P --min-free 1K --repeat 1s "${am[@]}" >/dev/null 2>"$TEST_DIR/err1" || rc=$?
[ "$rc" = 1 ] || fail "exit $rc, expected 1 (WARNING): $(cat "$TEST_DIR/err1")"
grep -q "sent FIRING fs $data to alertmanager http://127.0.0.1:$AM_PORT" "$TEST_DIR/err1" ||
  fail "no word of the alert sent: $(cat "$TEST_DIR/err1")"
wait_for 10 "the alert in Alertmanager" one_active
want="alertname=trainwatch_fs check=fs instance=$(hostname) severity=warning target=$data user=$(id -un)"
[ "$(active)" = "$want" ] || fail "labels: $(active); expected: $want"
curl -sf "$AM_URL/api/v2/alerts" | python3 -c '
import datetime, json, sys
a = json.load(sys.stdin)[0]
assert "FIRING" in a["annotations"]["summary"] and a["annotations"]["description"], a
t = lambda s: datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
life = (t(a["endsAt"]) - t(a["startsAt"])).total_seconds()
assert 3500 < life < 3700, "an alert not repeated lives an hour with --repeat 1s: %s" % life' ||
  fail "annotations or times are wrong"

log "2. it gets worse: the critical alert replaces the warning"
sent_at=$(date +%s)
next_second() { [ "$(date +%s)" -gt "$sent_at" ]; }
wait_for 5 "--repeat 1s to pass" next_second
"$TW" fs --path "$data" --min-free 1P --repeat 1s "${am[@]}" >/dev/null 2>&1 || true
wait_for 10 "one alert" one_active
active | grep -q "severity=critical" || fail "not critical: $(active)"

log "3. cleared: RESOLVED ends it"
"$TW" fs --path "$data" --min-free 1K "${am[@]}" >/dev/null 2>"$TEST_DIR/err3" || fail "expected OK: $(cat "$TEST_DIR/err3")"
grep -q "sent RESOLVED fs" "$TEST_DIR/err3" || fail "no RESOLVED sent: $(cat "$TEST_DIR/err3")"
wait_for 10 "no active alert" none_active

log "4. a job's check: the job label"
"$TW" job-running --job-name "no-such-job-$$" "${am[@]}" >/dev/null 2>&1 || true
wait_for 10 "the job's alert" one_active
active | grep -q "alertname=trainwatch_job_running .*job=no-such-job-$$ .*severity=critical" ||
  fail "the job's alert: $(active)"

log "5. Alertmanager stopped: the alert is kept, and sent once it is back"
stop_alertmanager
rc=0
"$TW" fs --path "$data" --min-free 1P --tries 2 "${am[@]}" >/dev/null 2>"$TEST_DIR/err5" || rc=$?
[ "$rc" = 2 ] || fail "exit $rc, expected 2 (CRITICAL)"
grep -q "kept in $state/spool" "$TEST_DIR/err5" || fail "not kept: $(cat "$TEST_DIR/err5")"
[ "$(find "$state/spool" -name '*.json' | wc -l)" = 1 ] || fail "expected 1 spooled alert"
start_alertmanager  # the same port and storage: what it knew of job-running is back too
"$TW" fs --path "$data" --min-free 1P "${am[@]}" >/dev/null 2>"$TEST_DIR/err5b" || true
grep -q "sent FIRING fs" "$TEST_DIR/err5b" || fail "the kept alert was not sent: $(cat "$TEST_DIR/err5b")"
[ "$(find "$state/spool" -name '*.json' | wc -l)" = 0 ] || fail "the spool is not empty"
fs_critical() { active | grep -q "alertname=trainwatch_fs .*severity=critical"; }
wait_for 10 "the kept alert in Alertmanager" fs_critical

log "6. from the config file's notify list; a bad address refused"
cfg=$TEST_DIR/tw.conf
printf 'notify = ["alertmanager:%s"]\nstate-dir = "%s"\n' "$AM_URL" "$state" >"$cfg"
chmod 644 "$cfg"  # an Alertmanager address is no secret: a readable config may hold it
"$TW" --config "$cfg" fs --path "$data" --min-free 1K >/dev/null 2>"$TEST_DIR/err6" || fail "config: $(cat "$TEST_DIR/err6")"
grep -q "sent RESOLVED fs" "$TEST_DIR/err6" || fail "no RESOLVED through the config's sink: $(cat "$TEST_DIR/err6")"
fs_gone() { ! active | grep -q "alertname=trainwatch_fs"; }
wait_for 10 "the fs alert resolved" fs_gone
for bad in "alertmanager:ftp://127.0.0.1:$AM_PORT" "alertmanager:env:NO_SUCH_VARIABLE_$$"; do
  rc=0
  out=$("$TW" fs --path "$data" --min-free 1P --state-dir "$TEST_DIR/state-bad" --notify "$bad" 2>&1) || rc=$?
  { [ "$rc" = 3 ] && [ "$(wc -l <<<"$out")" = 1 ]; } || fail "$bad: exit $rc: $out"
done
[ ! -e "$TEST_DIR/state-bad/spool" ] || [ -z "$(ls "$TEST_DIR/state-bad/spool")" ] || fail "a refused run spooled an alert"
log "PASS: labels, severity replaced, resolved, kept while Alertmanager was down and sent after, config list, bad input"
