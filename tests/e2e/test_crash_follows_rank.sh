#!/usr/bin/env bash
# e2e-modes: run
# A crash that follows a rank, not a node (issue 48): an array of 2 tasks, 2 nodes x 1
# rank under the launcher, where rank 1 (on the task's second node) aborts at step 15.
# Task 1 runs on n1 and n2: n2's rank dies first, and n2 is remembered as a bad node.
# Task 2 runs on n1 and n3: rank 1 dies first again, on n3. The crash follows the rank
# (its data, its part of the model), so n2's finding is forgiven, n3 is only suspected,
# and trainctl bad-nodes keeps no node off.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
port=$(free_port 2)  # one per task
cat >"$TEST_DIR/job.sh" <<JOB
#!/bin/bash
second=\$(scontrol show hostnames "\$SLURM_JOB_NODELIST" | sed -n 2p)
srun --ntasks-per-node=1 $BUILD/bin/trainctl-run -- bash -c "exec ${TORCHRUN[*]} --nnodes=2 --nproc_per_node=1 \
--rdzv_backend=static --master_addr=127.0.0.1 --master_port=\$(($port + SLURM_ARRAY_TASK_ID - 1)) \
--node_rank=\\\$SLURM_NODEID $TRAIN --ckpt-dir $TEST_DIR/ckpt-\$SLURM_ARRAY_TASK_ID --steps 100000 --step-time 0.2 \
--crash-on \$second --crash-at 15 --crash-how abort"
JOB
job=$(submit --hold --array=1-2%1 -N2 -w n1,n2 --time=5 -o "$TEST_DIR/task-%a.out" "$TEST_DIR/job.sh")
scontrol update jobid="${job}_2" ReqNodeList=n1,n3 || fail "could not move task 2 of $job to n1 and n3"
# One after the other: with n2 busy beside other tests, SLURM would start task 2 first.
scontrol release "${job}_1" || fail "could not release task 1 of $job"
log "submitted array $job: rank 1 aborts at step 15, on n2 in task 1 and on n3 in task 2"
wait_for 180 "task 1 to end" job_ended "${job}_1"
scontrol release "${job}_2" || fail "could not release task 2 of $job"
wait_for 180 "the array to end" array_gone "$job"
touch "$TRAINCTL_BAD_NODES"
log "bad-node memory: $(cat "$TRAINCTL_BAD_NODES")"
grep -qF "remembered n2 as a bad node (crashed (SIGABRT in rank 1 of array $job, the first death of the job" \
  "$TEST_DIR/task-1.out" || fail "task 1 did not convict n2 for rank 1: $(grep -h 'crash\|remembered' "$TEST_DIR/task-1.out")"
task2=$(job_field "${job}_2" JobId)
grep -qF "forgave n2: rank 1 of array $job died first there (job $job) and on n3 now: the crash follows the rank" \
  "$TEST_DIR/task-2.out" || fail "task 2 did not forgive n2: $(grep -h 'crash\|remembered\|forgave' "$TEST_DIR/task-2.out")"
[ "$(grep -c . "$TRAINCTL_BAD_NODES")" -eq 1 ] || fail "expected n3's suspicion alone: $(cat "$TRAINCTL_BAD_NODES")"
grep -q "^[0-9]* n3 job=$task2 gpus=[^ ]* reason=crashed, suspected (SIGABRT in rank 1 of array $job, which died first on n2 before; the crash follows the rank, not a node)$" \
  "$TRAINCTL_BAD_NODES" || fail "n3 is not only suspected: $(cat "$TRAINCTL_BAD_NODES")"
kept=$("$BUILD/bin/trainctl" bad-nodes list 2>"$TEST_DIR/why") || fail "trainctl bad-nodes failed: $(cat "$TEST_DIR/why")"
[ -z "$kept" ] || fail "trainctl bad-nodes keeps off '$kept'"
grep -q "not keeping off n3, only suspected" "$TEST_DIR/why" || fail "bad-nodes did not say why n3 is not kept off: $(cat "$TEST_DIR/why")"
log "PASS: rank 1's crash convicted n2 in task 1; when it died first on n3 in task 2, n2 was forgiven and n3 only suspected"
