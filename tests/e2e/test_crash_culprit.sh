#!/usr/bin/env bash
# e2e-variants: cgroup
# e2e-modes: run
# The crash culprit under a launcher with torchrun's process model, 3 nodes x 1 rank, 8
# runs as 8 steps of one job: the rank on n2 (not the job's first node) aborts (SIGABRT)
# at step 15; the ranks on n1 and n3 fail at their next agreement, a step (0.2 s) later
# ("connection closed by peer"), as under gloo, where they took 300-380 ms.
# Only n2 may be remembered as a bad node, in 8 runs out of 8, whichever node's
# supervisor finishes first. Then an 11th run where the rank on n2 raises an exception
# (a bug of the program, status 1): no node is blamed, and the log says so and names the
# error n2's rank raised. Prints the
# gap between the culprit's death and the next node's in every run.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

RUNS=${CULPRIT_RUNS:-8}
port=$(free_port $((RUNS + 1)))  # one per step
step_line() {  # one torchrun step over the 3 nodes; $1: how the rank on n2 crashes
  printf '%s\n' "srun --ntasks-per-node=1 $BUILD/bin/trainctl-run -- bash -c 'exec ${TORCHRUN[*]} \
--nnodes=3 --nproc_per_node=1 --rdzv_backend=static --master_addr=127.0.0.1 --master_port=\$((PORT + SLURM_STEP_ID)) \
--node_rank=\$SLURM_NODEID $TRAIN --ckpt-dir $TEST_DIR/ckpt-\$SLURM_STEP_ID --steps 100000 --step-time 0.2 \
--crash-on n2 --crash-at 15 --crash-how $1' || true"
}
{
  echo "#!/bin/bash"
  echo "export PORT=$port"
  for _ in $(seq 1 "$RUNS"); do step_line abort; done
  step_line exception
} >"$TEST_DIR/job.sh"
job=$(submit -N3 --ntasks-per-node=1 --time=15 -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job: $RUNS runs with an abort on n2, then one with an exception"
wait_for $((60 + 45 * RUNS)) "the job to end" job_ended "$job"
touch "$TRAINCTL_BAD_NODES"
log "bad-node memory: $(cat "$TRAINCTL_BAD_NODES")"
blamed_n2=$(grep -c "^[0-9]* n2 job=$job .*reason=crashed (SIGABRT" "$TRAINCTL_BAD_NODES" || true)
others=$(grep -v "^[0-9]* n2 " "$TRAINCTL_BAD_NODES" || true)
[ -z "$others" ] || fail "a healthy node was blamed: $others"
python3 - "$TEST_DIR/job.out" <<'PY'
import re, sys
gaps = [int(g) for g in re.findall(r"the next node \([^)]*\) (\d+) ms later", open(sys.argv[1]).read())]
if gaps:
    print("figure: the culprit's rank died %d to %d ms (median %d) before the next node's, in %d runs"
          % (min(gaps), max(gaps), sorted(gaps)[len(gaps) // 2], len(gaps)))
PY
log "figure: n2 blamed in $blamed_n2 of $RUNS runs with a crash on n2; no other node ever blamed"
[ "$blamed_n2" -eq "$RUNS" ] || fail "n2 was blamed in $blamed_n2 of $RUNS runs: $(grep 'crash:' "$TEST_DIR/job.out" | head -5)"
# The exception run: the last step.
last=$RUNS
grep -q "crash: the first rank to end on this node .* ended with exit status 1, not a fault of the node: no node is blamed" \
  "$TEST_DIR/job.out" || fail "the exception run did not say why nobody was blamed: $(grep 'crash' "$TEST_DIR/job.out" | tail -3)"
[ "$(grep -c "^[0-9]* n2 job=$job " "$TRAINCTL_BAD_NODES")" -eq "$RUNS" ] || fail "the exception run ($last) blamed n2"
grep -qE "\[n2 task 1\]: crash: rank 1 \(pid [0-9]+\) was the first rank to end on this node, with exit status 1: \`RuntimeError: a bug in the training program \(train_example\.py:[0-9]+ in [a-z_]+\)\`" \
  "$TEST_DIR/job.out" || fail "the exception run's log does not name the error: $(grep 'crash' "$TEST_DIR/job.out" | tail -3)"
log "PASS: n2 blamed $blamed_n2/$RUNS times for its abort, never n1 or n3; the exception blamed nobody"
