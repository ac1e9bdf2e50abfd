#!/usr/bin/env bash
# e2e-modes: run plugin
# A step with no launcher (`srun --ntasks-per-node=2 python train.py`): the command is
# the rank. A notice reaches both ranks on both nodes, they save and exit 0, and no
# process of the step is left behind.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

wrap=()
opts=(--kill-switch="$TEST_DIR/KILL")
if [ "$MODE" = run ]; then
  wrap=("$BUILD/bin/trainctl-run" "${opts[@]}" --)
  opts=()
fi
cat >"$TEST_DIR/job.sh" <<JOB
#!/bin/bash
srun --ntasks-per-node=2 ${wrap[*]} /usr/bin/python3 $TRAIN --ckpt-dir $TEST_DIR/ckpt \
  --steps 100000 --events "$TEST_DIR/events/rank{rank}.jsonl"
JOB
job=$(submit -N2 --ntasks-per-node=2 --time=5 "${opts[@]}" -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job ($MODE): 2 nodes x 2 tasks, no launcher"
wait_for 60 "4 ranks started" events_at_least start 4
sleep 1
scancel --signal=USR1 "$job"
wait_for 60 "the job to end" job_ended "$job"
read -r n _ reasons < <(exit_summary)
[ "$n" = 4 ] || fail "expected 4 ranks to exit, got $n"
[ "$reasons" = signal ] || fail "expected reason signal, got '$reasons'"
[ "$(job_state "$job")" = COMPLETED ] || fail "job ended $(job_state "$job")"
sleep 1
left=$(pgrep -f "$TEST_DIR" || true)
[ -z "$left" ] || fail "processes left behind: $left"
log "PASS: 4 ranks without a launcher got the notice and exited; nothing left behind"
