#!/usr/bin/env bash
# e2e-core: all
# e2e-torch: the switches under real torchrun: its agent, its ranks and gloo's agreement
# Real torchrun, 2 nodes x 2 ranks, on the local cluster: one touch of the save switch
# makes all 4 ranks save at the same step exactly once (and the switch is removed);
# the kill switch makes all 4 save and exit at one step; the job ends COMPLETED.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

export KILL_SWITCH=$TEST_DIR/KILL SAVE_SWITCH=$TEST_DIR/SAVE
export TRAINCTL_POLL_INTERVAL=2s
port=$(free_port)

cat >"$TEST_DIR/job.sh" <<JOB
#!/bin/bash
srun --ntasks-per-node=1 bash -c '${TORCHRUN[*]} --nnodes=\$SLURM_NNODES --nproc_per_node=2 \
  --rdzv_backend=static --master_addr=127.0.0.1 --master_port=$port --node_rank=\$SLURM_NODEID \
  $TRAIN --ckpt-dir $TEST_DIR/ckpt --steps 100000 --step-time 0.05 --events "$TEST_DIR/events/rank{rank}.jsonl"'
JOB

job=$(submit -N2 --ntasks-per-node=1 --time=10 -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job"
wait_for 120 "4 ranks started" events_at_least start 4
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
[ ! -e "$SAVE_SWITCH" ] || fail "the save switch was not removed after the agreed save"
log "all 4 ranks saved once, at step $steps; the switch is gone"

log "touching the kill switch"
touch "$KILL_SWITCH"
wait_for 60 "the job to end" job_ended "$job"
[ "$(job_state "$job")" = COMPLETED ] || fail "job ended $(job_state "$job"), not COMPLETED"
[ "$(events_count exit)" -eq 4 ] || fail "expected 4 exits, got $(events_count exit)"
python3 - "$TEST_DIR" <<'PY' || fail "exits disagree"
import glob, json, sys
exits = [json.loads(l) for f in glob.glob(sys.argv[1] + "/events/rank*.jsonl") for l in open(f) if '"exit"' in l]
steps = {e["step"] for e in exits}
reasons = {e["reason"] for e in exits}
saves = [json.loads(l) for f in glob.glob(sys.argv[1] + "/events/rank*.jsonl") for l in open(f) if '"save"' in l]
assert len(steps) == 1 and reasons == {"kill-switch"}, (steps, reasons)
assert sum(1 for s in saves if s["step"] in steps) == 4, "every rank saves at the exit step"
print("exit at step %s on all 4 ranks, reason kill-switch" % steps.pop())
PY
[ ! -e "$TRAINCTL_LOG_DIR/slow_nodes" ] || fail "an even run reported a straggler: $(cat "$TRAINCTL_LOG_DIR/slow_nodes")"
log "PASS (and no straggler reported on this even run)"
