#!/usr/bin/env bash
# e2e-modes: run
# A node convicted for a crash it did not cause (issue 63): 2 nodes x 1 rank, no
# launcher. Step 0: the rank on n2 kills its own supervisor (as a lost node, a stalled
# mount or a killed supervisor would leave it: nothing more from n2), and the rank on n1
# aborts a moment later, as NCCL's watchdog ends a rank that waited for a dead peer. The
# first death in the evidence is n1's SIGABRT, and n2 gave none: no node is convicted,
# and n1's log names n2. Step 1, the control: n1's rank aborts while n2's lives on, and
# n2's sign of life after the death lets n1 be convicted, as before, and the death's step
# in the run events is the one n1's rank was at, not the last agreement's.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

cat >"$TEST_DIR/loop.py" <<'PY'
import os, signal, sys, time
import trainctl

role, flag = sys.argv[1], sys.argv[2]
node = os.environ["SLURMD_NODENAME"]
ctl = trainctl.Controller()
step = 0


def train(seconds):
    global step
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        ctl.check(step)
        step += 1
        time.sleep(0.05)


def train_until(path):
    while not os.path.exists(path):
        train(0.1)


train(2)  # both supervisors have their rank and wrote their sign of life
if role == "vanish":
    if node == "n2":
        open(flag, "w").close()
        os.kill(int(os.environ["TRAINCTL_SUPERVISOR_PID"]), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)  # and the rank with it: the node is gone
    train_until(flag)
    train(2)  # a collective's timeout, waiting for n2
    os.abort()
if node == "n1":
    while True:  # between two agreements (every 10th step): the death's step is this rank's own
        ctl.check(step)
        if step % 10 == 7:
            break
        step += 1
    with open(flag, "w") as f:
        f.write(str(step))
    os.abort()
train_until(flag)
train(10)  # past the time n1's supervisor waits for a sign of life
PY
cat >"$TEST_DIR/job.sh" <<JOB
#!/bin/bash
srun --kill-on-bad-exit=0 --ntasks-per-node=1 $BUILD/bin/trainctl-run -- python3 $TEST_DIR/loop.py vanish $TEST_DIR/flag-0
srun --kill-on-bad-exit=0 --ntasks-per-node=1 $BUILD/bin/trainctl-run -- python3 $TEST_DIR/loop.py control $TEST_DIR/flag-1
JOB
export TRAINCTL_RUN_EVENTS_DIR=$TEST_DIR/runs
job=$(submit -N2 -w n1,n2 --ntasks-per-node=1 --time=5 -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job: step 0 loses n2's supervisor before n1's rank aborts; step 1 aborts on n1 alone"
wait_for 120 "the job to end" job_ended "$job"
touch "$TRAINCTL_BAD_NODES"
log "crash lines: $(grep 'crash' "$TEST_DIR/job.out")"
vanished=$(grep -E "^trainctl-run\[n1 task 0\]: crash: rank pid [0-9]+ on this node died by SIGABRT, but no evidence came from n2 \(its last sign of life [0-9.]+ s before this death\): the culprit may be there .*: no node is blamed$" "$TEST_DIR/job.out" | head -1)
[ -n "$vanished" ] || fail "step 0 did not name n2 as the node that gave no evidence: $(grep 'crash\|remembered' "$TEST_DIR/job.out")"
[ "$(grep -c . "$TRAINCTL_BAD_NODES")" -eq 1 ] || fail "expected step 1's conviction of n1 alone: $(cat "$TRAINCTL_BAD_NODES")"
grep -q "^[0-9]* n1 job=$job .*reason=crashed (SIGABRT in rank 0, the first death of the job; no other node's rank died)$" \
  "$TRAINCTL_BAD_NODES" || fail "step 1 did not convict n1: $(cat "$TRAINCTL_BAD_NODES"; grep 'crash' "$TEST_DIR/job.out")"
step=$(cat "$TEST_DIR/flag-1")
grep -q "^[0-9]* job=$job death step=$step reason=SIGABRT" "$TEST_DIR/runs/$job" ||
  fail "the run events do not give step $step, where n1's rank died: $(grep death "$TEST_DIR/runs/$job")"
log "PASS: with n2's supervisor gone, n1's abort convicted nobody and named n2; with n2 alive, n1 was convicted, its death at its own step $step"
