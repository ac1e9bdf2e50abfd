# shellcheck shell=bash
# The servers a test talks to on loopback: a real SMTP server and an HTTP receiver for
# the alerts, Alertmanager, node_exporter and Prometheus.
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

# await_server NAME PID URL LOG SECONDS: a server just started as PID, stopped by pid at
# cleanup, waited for until URL answers; one that exits first fails the test with its log.
await_server() {
  local name=$1 pid=$2 url=$3 log=$4
  SERVER_PIDS+=("$pid")
  # shellcheck disable=SC2317  # called by wait_for
  server_ready() {
    kill -0 "$pid" 2>/dev/null || fail "$name exited: $(tail -3 "$log")"
    curl -sf --max-time 2 "$url" >/dev/null
  }
  wait_for "$5" "$name at $url" server_ready
}

# start_alertmanager: Debian's Alertmanager on a free loopback port, its gossip off, its
# data in the test's directory, routing every alert to a receiver that sends nothing;
# stopped by pid at cleanup (stop_alertmanager stops it earlier). Sets AM_URL, AM_PID.
start_alertmanager() {
  local port
  port=${AM_PORT:-$(free_port)}
  AM_PORT=$port
  mkdir -p "$TEST_DIR/alertmanager"
  printf 'route:\n  receiver: quiet\n  group_wait: 1s\nreceivers:\n  - name: quiet\n' >"$TEST_DIR/alertmanager/am.yml"
  prometheus-alertmanager --config.file="$TEST_DIR/alertmanager/am.yml" --storage.path="$TEST_DIR/alertmanager/data" \
    --web.listen-address="127.0.0.1:$port" --cluster.listen-address= >>"$TEST_DIR/alertmanager/log" 2>&1 &
  AM_PID=$!
  # shellcheck disable=SC2034  # read by the tests
  AM_URL=http://127.0.0.1:$port
  await_server Alertmanager "$AM_PID" "$AM_URL/-/ready" "$TEST_DIR/alertmanager/log" 30
}
stop_alertmanager() {
  kill "$AM_PID" 2>/dev/null || true
  wait "$AM_PID" 2>/dev/null || true
}

# start_node_exporter DIR: Debian's node_exporter on a free loopback port with only its
# textfile collector, reading DIR; stopped by pid at cleanup. Sets NE_URL.
start_node_exporter() {
  local port
  port=$(free_port)
  prometheus-node-exporter --collector.disable-defaults --collector.textfile --collector.textfile.directory="$1" \
    --web.listen-address="127.0.0.1:$port" >>"$TEST_DIR/node_exporter.log" 2>&1 &
  # shellcheck disable=SC2034  # read by the tests
  NE_URL=http://127.0.0.1:$port
  await_server node_exporter $! "$NE_URL/metrics" "$TEST_DIR/node_exporter.log" 30
}

# start_prometheus TARGET: Debian's Prometheus on a free loopback port scraping TARGET
# (host:port) every second, its data in the test's directory; stopped by pid at
# cleanup. Sets PROM_URL.
start_prometheus() {
  local port
  port=$(free_port)
  mkdir -p "$TEST_DIR/prometheus"
  printf 'global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: ["%s"]\n' \
    "$1" >"$TEST_DIR/prometheus/prometheus.yml"
  prometheus --config.file="$TEST_DIR/prometheus/prometheus.yml" --storage.tsdb.path="$TEST_DIR/prometheus/data" \
    --web.listen-address="127.0.0.1:$port" >>"$TEST_DIR/prometheus/log" 2>&1 &
  # shellcheck disable=SC2034  # read by the tests
  PROM_URL=http://127.0.0.1:$port
  await_server Prometheus $! "$PROM_URL/-/ready" "$TEST_DIR/prometheus/log" 60
}
