#!/usr/bin/env bash
# e2e-modes: run plugin
# e2e-core: plugin
# e2e-torch: the accelerate launcher's own process model and signal handling
# Hugging Face `accelerate launch`, 2 nodes x 2 ranks, under the supervisor (trainctl-run
# or the plugin): a touch of the save switch makes all 4 ranks save once at one step;
# then `scancel --signal=USR1` reaches every rank (never the launchers, which live on and
# exit 0), all 4 save and exit at one step, and the job is COMPLETED. Where the system
# Python has no accelerate (Debian 12; sid has python3-accelerate) the test says so and
# skips.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

if ! /usr/bin/python3 -c 'import accelerate' 2>/dev/null; then
  log "SKIP: /usr/bin/python3 has no accelerate (apt-get install python3-accelerate, Debian 13 and later)"
  exit 77
fi
export E2E_LAUNCHER=accelerate SAVE_SWITCH=$TEST_DIR/SAVE TRAINCTL_POLL_INTERVAL=2s
supervised_job "$TEST_DIR/job.sh" --save-switch="$SAVE_SWITCH"
job=$(submit -N2 --ntasks-per-node=1 --time=10 "${JOB_OPTS[@]}" -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job ($(/usr/bin/python3 -c 'import accelerate; print("accelerate", accelerate.__version__)'))"
wait_for 180 "4 ranks started" events_at_least start 4
wait_for 60 "the ranks past step 20" ranks_past "$job" 4 20

log "touching the save switch"
touch "$SAVE_SWITCH"
wait_for 30 "4 saves" events_at_least save 4
sleep 3  # room for a wrong second save to show up
[ "$(events_count save)" -eq 4 ] || fail "expected exactly 4 saves, got $(events_count save)"
steps=$(cat "$TEST_DIR"/events/rank*.jsonl | python3 -c '
import json, sys
print(" ".join(sorted({str(json.loads(l)["step"]) for l in sys.stdin if "\"save\"" in l})))')
[ "$(wc -w <<<"$steps")" -eq 1 ] || fail "ranks saved at different steps: $steps"
log "all 4 ranks saved once, at step $steps"

launchers=$(pgrep -f 'accelerate launch' | wc -l)
[ "$launchers" -ge 2 ] || fail "expected the 2 accelerate launchers running, found $launchers"
log "scancel --signal=USR1 $job"
scancel --signal=USR1 "$job"
wait_for 60 "the job to end" job_ended "$job"
read -r n steps reasons < <(exit_summary)
[ "$(job_state "$job")" = COMPLETED ] || fail "job ended $(job_state "$job"), not COMPLETED"
{ [ "$n" = 4 ] && [ "$steps" = 1 ]; } || fail "expected 4 ranks to exit at one step; got $n ranks at $steps steps"
[ "$reasons" = signal ] || fail "expected reason 'signal', got '$reasons'"
[ "$(job_field "$job" ExitCode)" = 0:0 ] || fail "the job's exit code is $(job_field "$job" ExitCode), not 0:0"
grep -q "received SIGUSR1" "$TEST_DIR/job.out" || fail "the supervisor did not log the notice"
if grep -qE 'Signals\.SIGUSR1|SignalException' "$TEST_DIR/job.out"; then fail "a launcher got the signal"; fi
log "PASS: accelerate launch: one agreed save, then the notice reached all 4 ranks (reason $reasons), launchers exited 0"
