#!/usr/bin/env bash
# e2e-modes: run plugin
# --on-notice runs the user's command once per notice, on the job's first node only,
# with the notice in its environment and its output in the job's log, under a time
# limit. Two `scancel --signal=USR1` in a row reach both nodes' supervisors (and the
# batch step's, under the plugin): the command still runs once. Under trainctl-run it
# sleeps past --on-notice-timeout=3s and is ended there; the ranks still save and exit.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

cat >"$TEST_DIR/hook.sh" <<'HOOK'
#!/bin/bash
echo "ran $TRAINCTL_NOTICE on $SLURMD_NODENAME for job $SLURM_JOB_ID at $(date +%s.%N)" >>"${0%/*}/hook.log"
echo "hook-output: notice $TRAINCTL_NOTICE"
[ -z "${HOOK_SLEEP:-}" ] || exec sleep "$HOOK_SLEEP"
HOOK
chmod +x "$TEST_DIR/hook.sh"
if [ "$MODE" = run ]; then
  export HOOK_SLEEP=30.$$  # this test's own: other tests' processes may sleep 30 s too
  supervised_job "$TEST_DIR/job.sh" --kill-switch="$TEST_DIR/KILL" --on-notice="$TEST_DIR/hook.sh" --on-notice-timeout=3s
else
  supervised_job "$TEST_DIR/job.sh" --kill-switch="$TEST_DIR/KILL" --on-notice="$TEST_DIR/hook.sh"
fi
job=$(submit -N2 --ntasks-per-node=1 --time=10 "${JOB_OPTS[@]}" -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job"
wait_for 120 "4 ranks started" events_at_least start 4
sleep 1
scancel --signal=USR1 "$job"
sleep 0.2
scancel --signal=USR1 "$job"
wait_for 60 "the job to end" job_ended "$job"
[ "$(job_state "$job")" = COMPLETED ] || fail "job ended $(job_state "$job"), not COMPLETED: $(cat "$TEST_DIR/job.out")"
read -r n steps reasons < <(exit_summary)
{ [ "$n" = 4 ] && [ "$steps" = 1 ] && [ "$reasons" = signal ]; } || fail "expected 4 ranks to exit at one step; got $n at $steps steps ($reasons)"
[ -s "$TEST_DIR/hook.log" ] || fail "the --on-notice command never ran: $(cat "$TEST_DIR/job.out")"
runs=$(wc -l <"$TEST_DIR/hook.log")
[ "$runs" -eq 1 ] || fail "the command ran $runs times, not once: $(cat "$TEST_DIR/hook.log")"
first=$(job_node "$job" 1)  # beside other tests the job may get any two of n1-n3
grep -q "^ran signal on $first for job $job " "$TEST_DIR/hook.log" || fail "unexpected run (not on $first): $(cat "$TEST_DIR/hook.log")"
grep -q "hook-output: notice signal" "$TEST_DIR/job.out" || fail "the command's output is not in the job log"
if [ "$MODE" = run ]; then
  grep -q "on-notice: signal: the command ended at its time limit of 3s" "$TEST_DIR/job.out" ||
    fail "the time limit was not applied: $(grep on-notice "$TEST_DIR/job.out")"
  pgrep -f "^sleep ${HOOK_SLEEP//./\\.}\$" >/dev/null && fail "the command's sleep outlived its time limit"
else
  grep -q "on-notice: signal: the command exited with status 0" "$TEST_DIR/job.out" ||
    fail "no exit line: $(grep on-notice "$TEST_DIR/job.out")"
fi
log "PASS: the command ran once, on the first node ($first), output in the job log; $(grep -o 'on-notice: signal: the command [a-z ]*[0-9a-z]*' "$TEST_DIR/job.out" | head -1)"
