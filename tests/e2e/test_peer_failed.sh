#!/usr/bin/env bash
# e2e-modes: run
# e2e-core: run
# A task of the step fails and SLURM ends the others (srun --kill-on-bad-exit): real
# torchrun, 3 nodes x 1 rank, the rank on n2 aborts (SIGABRT) at step 40; the others fail
# in their all_reduce, and the first task to end makes srun send the remaining tasks
# SIGTERM, then SIGKILL (22.05 and 26.05 alike). That TERM is a peer's death, not a time
# limit or a preemption: the supervisor says so, with the node whose rank ended first,
# asks the controller nothing, and tells its ranks to save (reason peer-failed) if they
# still can. The culprit is still judged, though its own task got the TERM too (before
# that fix it was "not judged"): n2, and only n2, is remembered as a bad node. The step's
# crash evidence is kept (a node was blamed).
# Which task ends first is a race of three torchruns (each looks at its workers every few
# seconds), and gloo's ranks fail a second after their peer, where NCCL's would wait in
# the collective: the tasks on n2 and n3 stay until 3 s after n1's torchrun ended, the
# one on n1 does not. So n1's task ends first, and the TERM reaches both the culprit's
# task and a survivor's (well before SLURM's KILL, KillWait=10 s later), on every run.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

export TRAINCTL_LOG_QUERIES=1  # each query to the controller is a line: the test counts them
port=$(free_port)
cat >"$TEST_DIR/job.sh" <<JOB
#!/bin/bash
srun --kill-on-bad-exit=1 --ntasks-per-node=1 $BUILD/bin/trainctl-run -- bash -c '${TORCHRUN[*]} \
--nnodes=3 --nproc_per_node=1 --rdzv_backend=static --master_addr=127.0.0.1 --master_port=$port \
--node_rank=\$SLURM_NODEID $TRAIN --ckpt-dir $TEST_DIR/ckpt --steps 100000 --step-time 0.05 \
--crash-on n2 --crash-at 40 --crash-how abort; rc=\$?
if [ "\$SLURMD_NODENAME" = n1 ]; then touch $TEST_DIR/n1-ended; exit \$rc; fi
for _ in \$(seq 300); do [ -e $TEST_DIR/n1-ended ] && break; sleep 0.1; done
sleep 3; exit \$rc'
JOB
job=$(submit -N3 --ntasks-per-node=1 --time=10 -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job: the rank on n2 aborts at step 40, srun --kill-on-bad-exit=1"
wait_for 180 "the job to end" job_ended "$job"
touch "$TRAINCTL_BAD_NODES"
grep -E 'trainctl-run|srun' "$TEST_DIR/job.out" | grep -v '^ ' >&2 || true
[ "$(grep -c "^[0-9]* n2 job=$job .*reason=crashed (SIGABRT" "$TRAINCTL_BAD_NODES")" -eq 1 ] ||
  fail "n2 was not remembered once: $(cat "$TRAINCTL_BAD_NODES")"
others=$(grep -v "^[0-9]* n2 " "$TRAINCTL_BAD_NODES" || true)
[ -z "$others" ] || fail "a healthy node was blamed: $others"
major=$(sinfo --version | grep -o '[0-9][0-9]*' | head -1)
terms=$(grep -c 'received SIGTERM' "$TEST_DIR/job.out" || true)
peer=$(grep -c 'SIGTERM came when a rank on n[0-9]* ended with .* before: a task of this step failed' "$TEST_DIR/job.out" || true)
log "SLURM $major: $terms surviving task(s) got SIGTERM; $peer said it was a peer's death"
[ "$terms" -eq 2 ] || fail "SLURM $major sent SIGTERM to $terms task(s), not to the 2 still running (n2's and n3's)"
[ "$peer" -eq "$terms" ] || fail "a TERM after the crash was not taken for a peer's death: $(grep -A1 'received SIGTERM' "$TEST_DIR/job.out")"
if grep -q "asked the controller for the job's EndTime (after the signal" "$TEST_DIR/job.out"; then
  fail "the peer's death was taken for a possible preemption: $(grep 'after the signal' "$TEST_DIR/job.out")"
fi
ls -d "$TRAINCTL_LOG_DIR/trainctl-$(id -un)/crash-$job".* >/dev/null 2>&1 || fail "the evidence of the blamed node was not kept"
log "PASS: n2 blamed alone; every TERM after its crash said a peer had failed"
