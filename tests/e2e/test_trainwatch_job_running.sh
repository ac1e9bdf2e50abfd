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

# A job the no-progress breaker ended (exit status 93): the CRITICAL line says so, where
# the cluster keeps accounting (sacct has the job's end).
if grep -q '^AccountingStorageType=accounting_storage/slurmdbd' "$SLURM_CONF"; then
  nop=$(submit -N1 -J "stopped run" -o /dev/null --wrap "exit 93")
  wait_for 30 "the exit-93 job to end" job_ended "$nop"
  # As the check asks (by name, over a window that ends now: a job that ended in this
  # very second is not in it yet).
  in_sacct() { sacct -X -n -P -u "$(id -u)" --name="stopped run" -S now-7days -o JobID,ExitCode | grep -qx "$nop|93:0"; }
  wait_for 30 "sacct to have its end" in_sacct
  rc=0
  out=$("$TW" job-running --job-name "stopped run" --state-dir "$state") || rc=$?
  echo "$out"
  [ "$rc" = 2 ] || fail "exit $rc for a job the breaker ended, expected 2"
  grep -q "^JOB-RUNNING CRITICAL - no job named 'stopped run' is running or pending for user [^;]*; the last one, $nop, ended FAILED at [0-9T:-]* with exit status 93: trainctl's no-progress breaker stopped it" <<<"$out" ||
    fail "the breaker's end is not named: $out"
fi

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
