#!/usr/bin/env bash
# e2e-modes: run plugin
# A graceful exit no shorter than the time limit (--time=1 with a graceful exit of 2
# minutes: the template's 10-minute default under a short test allocation) leaves no time
# to train. The supervisor says so in one line naming both and what to change, and the
# rank saves and exits at once with reason deadline; the reason is not "the supervisor
# was stopped or busy", which it said before for a deadline already past when learned.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

# One rank, no launcher (no torch start: the point is the supervisor's first minute).
wrap=()
opts=(--graceful-exit=2)
if [ "$MODE" = run ]; then
  wrap=("$BUILD/bin/trainctl-run" "${opts[@]}" --)
  opts=()
fi
cat >"$TEST_DIR/job.sh" <<JOB
#!/bin/bash
srun ${wrap[*]} /usr/bin/python3 $TRAIN --ckpt-dir $TEST_DIR/ckpt --steps 100000 --events "$TEST_DIR/events/rank{rank}.jsonl"
JOB
job=$(submit -N1 --time=1 "${opts[@]}" -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job ($MODE): time limit 1 min, graceful exit 2 min"
wait_for 90 "the rank to exit" events_at_least exit 1
read -r n _ reasons < <(exit_summary)
{ [ "$n" -ge 1 ] && [ "$reasons" = deadline ]; } || fail "expected the ranks to exit with reason deadline; got $n, '$reasons'"
wait_for 60 "the job to end" job_ended "$job"
grep -q "the graceful exit (2m) is not shorter than the time left ([0-9]*s of a 1m time limit): the ranks are told to save and exit now; give a shorter --graceful-exit" "$TEST_DIR/job.out" ||
  fail "no line saying the graceful exit is too long: $(grep trainctl "$TEST_DIR/job.out" | head -5)"
! grep -q "stopped or busy" "$TEST_DIR/job.out" || fail "the deadline was blamed on a stopped supervisor"
log "PASS: the too-long graceful exit was named, and the rank saved and exited at once"
