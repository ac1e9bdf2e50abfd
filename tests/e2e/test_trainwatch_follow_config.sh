#!/usr/bin/env bash
# trainwatch log-stall --follow, configured from a file: when the logs stop, it alerts
# at the threshold (not at the next cron tick) and runs --on-stall; when they move
# again it sends RESOLVED.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
start_alert_servers
TW=$BUILD/bin/trainwatch
mkdir -p "$TEST_DIR/logs"
echo start >"$TEST_DIR/logs/rank0.log"
cat >"$TEST_DIR/trainwatch.toml" <<CONF
# Alerting once at the top; each check's options in its section.
state-dir = "$TEST_DIR/state"
notify = ["webhook:http://127.0.0.1:$HTTP_PORT/hook"]
[log-stall]
path = ["$TEST_DIR/logs/rank*.log"]
max-age = "3s"
on-stall = "touch $TEST_DIR/STALLED"
CONF
chmod 600 "$TEST_DIR/trainwatch.toml"  # it holds a webhook URL: a secret
"$TW" --config "$TEST_DIR/trainwatch.toml" log-stall --follow >"$TEST_DIR/follow.out" 2>&1 &
follower=$!
stop_follower() { kill "$follower" 2>/dev/null || true; wait "$follower" 2>/dev/null || true; }
on_exit() {
  local rc=$?
  stop_follower
  set +e  # errexit would end this handler at the next line, before cleanup
  (exit "$rc")
  cleanup
}
trap on_exit EXIT
for _ in 1 2 3 4 5 6; do echo step >>"$TEST_DIR/logs/rank0.log"; sleep 0.5; done
[ ! -e "$TEST_DIR/STALLED" ] || fail "a stall was reported while the log was written"
wait_for 10 "the stall to be noticed" test -e "$TEST_DIR/STALLED"
firing() { grep -l '"state":"FIRING"' "$REQDIR"/*.json >/dev/null 2>&1; }
wait_for 10 "the FIRING alert" firing
echo again >>"$TEST_DIR/logs/rank0.log"
resolved() { grep -l '"state":"RESOLVED"' "$REQDIR"/*.json >/dev/null 2>&1; }
wait_for 10 "the RESOLVED alert" resolved
cat "$TEST_DIR/follow.out"
# How long after the last write trainwatch found the stall: the age it measured then
# (the log's mtime to its check), not this script's clock, which under the releases'
# load once added 4 s of its own polling and Python start-up (7.4 s measured).
took=$(grep -m1 -o '^LOG-STALL CRITICAL .*age_seconds=[0-9.]*' "$TEST_DIR/follow.out" | sed 's/.*age_seconds=//')
[ -n "$took" ] || fail "no LOG-STALL CRITICAL line with its age_seconds in follow.out"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 6 else 1)" "$took" || fail "the stall was noticed after $took s (limit 3 s)"
log "PASS: stall noticed $took s after the last write (limit 3 s), --on-stall ran, FIRING then RESOLVED"
