#!/usr/bin/env bash
# The crontab emulation on the local cluster with a 1-minute period: a job dropped into
# cron.hourly/ runs every period; submitting the chain twice leaves one chain; the
# heartbeat is fresh; old outputs are removed; a chain that cannot resubmit itself
# raises an alert (to a webhook on loopback) instead of ending silently.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
start_alert_servers
export PATH=$BUILD/bin:$PATH
project=$TEST_DIR/project
mkdir -p "$project"
cp -r "$SRC/cron" "$project/cron"
cat >"$project/cron/trainwatch.conf" <<CONF
state-dir = "$TEST_DIR/state"
notify = ["webhook:http://127.0.0.1:$HTTP_PORT/hook"]
CONF
chmod 600 "$project/cron/trainwatch.conf"
cat >"$project/cron/cron.hourly/tick.slurm" <<JOB
#!/bin/bash
#SBATCH --ntasks=1
date +%s >>$TEST_DIR/ticks
JOB
mkdir -p "$project/cron/logs"
touch -d '10 days ago' "$project/cron/logs/cron-hourly-1.out"
stop_chains() {
  local n
  for n in cron-hourly cron-broken cron-tick; do scancel -u "$(id -un)" -n "$n" 2>/dev/null || true; done
}
on_exit() {
  local rc=$?
  stop_chains
  set +e  # errexit would end this handler at the next line, before cleanup
  (exit "$rc")
  cleanup
}
trap on_exit EXIT

cd "$project" || exit 1
first=$(submit --export=ALL,CRON_PERIOD=1minute cron/cron-hourly.slurm)
second=$(submit --export=ALL,CRON_PERIOD=1minute cron/cron-hourly.slurm)
log "submitted the hourly chain twice ($first, $second) with a 1-minute period"
ticks() { [ -f "$TEST_DIR/ticks" ] && [ "$(wc -l <"$TEST_DIR/ticks")" -ge "$1" ]; }
wait_for 90 "the first tick" ticks 1
wait_for 150 "the second tick, one period later" ticks 2
gap=$(awk 'NR==1{a=$1} NR==2{print $1-a}' "$TEST_DIR/ticks")
log "ticks $gap s apart"
[ "$gap" -ge 45 ] || fail "the second tick came $gap s after the first, not one period later"
# This user's chain only: test_readme runs README's cron chain (same job name) as another
# user on the same cluster, often at the same time.
pending=$(squeue -h -u "$(id -un)" -n cron-hourly -t PENDING -o %i | wc -l)
[ "$pending" -le 1 ] || fail "$pending chain ticks queued: the second submission made a second chain"
[ "$(wc -l <"$TEST_DIR/ticks")" -le 3 ] || fail "too many ticks: two chains ran"
[ ! -e "$project/cron/logs/cron-hourly-1.out" ] || fail "an old output was not removed"
"$BUILD/bin/trainwatch" log-stall --path "$project/cron/heartbeat-hourly" --max-age 5m --state-dir "$TEST_DIR/s2" >/dev/null ||
  fail "the heartbeat is stale"

log "a chain that cannot queue its next tick raises an alert"
broken=$(submit -J cron-broken --export=ALL,CRON_PERIOD=not-a-period cron/cron-hourly.slurm)
wait_for 60 "the broken tick to end" job_ended "$broken"
alerted() { grep -l '"state":"FIRING"' "$REQDIR"/*.json 2>/dev/null | xargs -r grep -l 'could not queue its next tick' >/dev/null; }
wait_for 30 "the alert" alerted
log "PASS: one chain, a tick every ${gap} s, heartbeat fresh, old outputs removed, a failed resubmission alerted"
