#!/usr/bin/env bash
# e2e-core: all
# e2e-torch: a snapshot of a state dict of tensors goes through torch.save and torch.load
# Snapshots of torch tensors (issue 65), with real torchrun: an array of 2 tasks, 1 node
# x 2 ranks on gloo, a gradient all_reduce every step (so the ranks stay in step), saves
# every 100 steps and a snapshot every 5 of a state dict whose tensor is filled with its
# step (--state-mb 4: 4 MB of float32 per rank). Rank 1 raises at step 37 in task 1; task
# 2 resumes from the snapshot of step 35, loaded with trainctl.load_snapshot, each rank's
# tensor checked against the step (the loop raises otherwise), and finishes.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
port=$(free_port 2)
cat >"$TEST_DIR/job.sh" <<JOB
#!/bin/bash
fault=""
[ "\$SLURM_ARRAY_TASK_ID" = 1 ] && fault="--crash-on '*' --crash-rank 1 --crash-at 37 --crash-how exception"
srun --kill-on-bad-exit=1 $BUILD/bin/trainctl-run -- bash -c "exec ${TORCHRUN[*]} --nnodes=1 --nproc_per_node=2 \
--rdzv_backend=static --master_addr=127.0.0.1 --master_port=\$(($port + SLURM_ARRAY_TASK_ID - 1)) --node_rank=0 \
$TRAIN --ckpt-dir $TEST_DIR/ckpt --events $TEST_DIR/events/rank{rank}.jsonl --steps 45 --step-time 0.05 --allreduce \
--save-every 100 --snapshot-every 5 --state-mb 4 \$fault"
JOB
job=$(submit --array=1-2%1 -N1 --time=5 -o "$TEST_DIR/task-%a.out" "$TEST_DIR/job.sh")
log "submitted array $job: rank 1 raises at step 37 in task 1"
wait_for 300 "array $job to end" array_gone "$job"
grep -q "^trainctl-run[^:]*: a rank died: the snapshots in memory of 2 ranks written out as saves (steps 30 to 35)$" \
  "$TEST_DIR/task-1.out" || fail "the supervisor did not write out the ranks' snapshots of steps 30 and 35"
[ -e "$TEST_DIR/ckpt/FINISHED" ] || fail "task 2 did not finish (a rank's tensor did not match its snapshot's step?)"
for r in 0 1; do
  start=$(grep '"event": "start"' "$TEST_DIR/events/rank$r.jsonl" | tail -1)
  grep -q '"resumed_from": 35,.*"from_snapshot": true' <<<"$start" ||
    fail "rank $r of task 2 did not resume from the snapshot of step 35: $start"
done
size=$(stat -c %s "$TEST_DIR/ckpt/snapshot-35/rank-1.snapshot")
[ "$size" -gt 4000000 ] || fail "rank 1's snapshot holds $size bytes, not its 4 MB tensor"
log "PASS: both ranks of task 2 resumed from the snapshot of step 35, their tensors as they were ($size bytes each)"
