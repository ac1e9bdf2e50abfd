# shellcheck shell=bash
# The alert receivers on loopback: a real SMTP server and an HTTP receiver.
# Sourced by tests/e2e/lib.sh: functions only, nothing runs when it is sourced.

# start_alert_servers: a real SMTP server (aiosmtpd) and an HTTP receiver on loopback,
# stopped by pid at cleanup. Sets SMTP_PORT, HTTP_PORT, MAILDIR, REQDIR and PLAN.
start_alert_servers() {
  MAILDIR=$TEST_DIR/mail REQDIR=$TEST_DIR/requests PLAN=$TEST_DIR/plan
  mkdir -p "$MAILDIR" "$REQDIR"
  : >"$PLAN"
  /usr/bin/python3 "$SRC/tests/e2e/alert_servers.py" smtp "$TEST_DIR/smtp.port" "$MAILDIR" &
  SERVER_PIDS+=($!)
  /usr/bin/python3 "$SRC/tests/e2e/alert_servers.py" http "$TEST_DIR/http.port" "$REQDIR" "$PLAN" &
  SERVER_PIDS+=($!)
  wait_for 20 "the SMTP server" test -s "$TEST_DIR/smtp.port"
  wait_for 20 "the HTTP server" test -s "$TEST_DIR/http.port"
  # shellcheck disable=SC2034  # read by the tests
  SMTP_PORT=$(cat "$TEST_DIR/smtp.port")
  # shellcheck disable=SC2034
  HTTP_PORT=$(cat "$TEST_DIR/http.port")
}
stop_alert_servers() {
  local p
  for p in "${SERVER_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${SERVER_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  SERVER_PIDS=()
}
