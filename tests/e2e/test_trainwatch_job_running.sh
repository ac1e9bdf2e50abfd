#!/usr/bin/env bash
# e2e-core: all
# e2e-alone: it stops slurmctld and starts the cluster again
# trainwatch job-running against the local cluster: a running job with a long name
# holding spaces and '|'; a pending job with its reason; a missing name is CRITICAL;
# the check never counts the job it runs in; a stopped controller is UNKNOWN.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
TW=$BUILD/bin/trainwatch
state=$TEST_DIR/state
name="train llama|v2 with spaces and a name much longer than forty characters"

job=$(submit -N1 -J "$name" -o /dev/null --wrap "sleep 120")
pend=$(submit -N1 -J "waiting job" --begin=now+1hour -o /dev/null --wrap "true")
running() { [ "$(job_state "$job")" = RUNNING ]; }
wait_for 30 "the job to run" running

rc=0
out=$("$TW" job-running --job-name "$name" --job-name "waiting job" --job-name "no such job" --state-dir "$state") || rc=$?
echo "$out"
[ "$rc" = 2 ] || fail "exit $rc, expected 2 (one name missing)"
grep -q "^JOB-RUNNING OK - '$name' is running (job $job)" <<<"$out" || fail "the long name was not found running"
grep -q "^JOB-RUNNING OK - 'waiting job' is pending (job $pend): waiting for its begin time" <<<"$out" || fail "pending reason"
grep -q "^JOB-RUNNING CRITICAL - no job named 'no such job'" <<<"$out" || fail "missing job not CRITICAL"

# A watchdog job named like the job it watches never finds itself.
watch=$(submit -N1 -J "lonely" -o "$TEST_DIR/self.out" --wrap "$TW job-running --job-name lonely --state-dir $state")
wait_for 30 "the watchdog job to end" job_ended "$watch"
grep -q "^JOB-RUNNING CRITICAL - no job named 'lonely'" "$TEST_DIR/self.out" || fail "it counted its own job: $(cat "$TEST_DIR/self.out")"

# The controller stopped: UNKNOWN, never OK, never CRITICAL.
ctld_pid=$(cat "$CLUSTER_ETC/../run/slurmctld.pid")
kill "$ctld_pid"
gone() { ! kill -0 "$ctld_pid" 2>/dev/null; }
wait_for 20 "slurmctld to stop" gone
rc=0
start=$SECONDS
out=$("$TW" job-running --job-name "$name" --timeout 20s --state-dir "$state") || rc=$?
echo "$out"
log "restarting the cluster"
"$SRC/scripts/local-cluster" up >/dev/null
[ "$rc" = 3 ] || fail "exit $rc with the controller down, expected 3 (UNKNOWN)"
grep -q "^JOB-RUNNING UNKNOWN - cannot ask the controller" <<<"$out" || fail "not UNKNOWN: $out"
log "PASS: running, pending with its reason, missing, never itself, UNKNOWN without a controller ($((SECONDS - start)) s)"
