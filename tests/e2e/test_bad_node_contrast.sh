#!/usr/bin/env bash
# e2e-modes: run
# A node convicted by contrast across programs (issue 48), with the template as users
# submit it: two arrays (two programs) of one-node tasks. In each, task 1 runs on n1 and
# crashes there (SIGABRT at step 5, as on a node with a broken GPU), then task 2 runs on
# another node (n2, n3) and finishes cleanly. A crash in a one-node job is only a
# suspicion: after the first array n1 is suspected and kept off by nothing, and after
# the second program's crash too (two programs aborted on n1, but the second never ran
# elsewhere yet). When the second program has run cleanly elsewhere too, the supervisor
# of its clean task convicts n1, once, naming both programs; trainctl bad-nodes keeps it
# off. Between the two, a sweep (issue 63): an array whose tasks train with other
# arguments (--steps 2<task>), task 1 crashing on n1 and task 2 running cleanly on n3.
# Task 2 is another program: nothing shows task 1's program runs cleanly elsewhere, so
# it does not join program 1's case (the array alone did, before).
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
args="--step-time 0.05 --crash-on n1 --crash-at 5"
use_train_template "--steps 20 $args"
# array NAME NODE [CHECK]: task 1 on n1, task 2 on NODE, one after the other (with n1
# busy beside other tests, SLURM would start task 2 first, and its clean end would cancel
# task 1), CHECK run between them; waits for its end. Its job id goes to $job.
job=""
array() {
  job=$(submit --hold --array=1-2%1 -N1 -w n1 --time=5 -J "$1" train.slurm)
  scontrol update jobid="${job}_2" ReqNodeList="$2" || fail "could not move task 2 of $job to $2"
  scontrol release "${job}_1" || fail "could not release task 1 of $job"
  wait_for 120 "task 1 of $1 ($job) to end" job_ended "${job}_1"
  [ -z "${3:-}" ] || "$3"
  scontrol release "${job}_2" || fail "could not release task 2 of $job"
  wait_for 180 "array $1 ($job) to end" array_gone "$job"
  got=$(array_states "$job")
  [ "$got" = "1:FAILED 2:COMPLETED" ] || fail "array $1: task states $got; $(tail -n 3 "$TEST_DIR/$1"-*.out)"
}
array prog1 n2
first=$job
log "program 1 (array $first): crashed on n1, ran cleanly on n2"
touch "$TRAINCTL_BAD_NODES"
grep -q "^[0-9]* n1 .*reason=crashed, suspected (SIGABRT in a rank of a one-node job of array $first;" \
  "$TRAINCTL_BAD_NODES" || fail "n1 is not suspected for program 1: $(cat "$TRAINCTL_BAD_NODES")"
[ -z "$("$BUILD/bin/trainctl" bad-nodes list 2>/dev/null)" ] || fail "one program's crash kept a node off"
# shellcheck disable=SC2016  # expanded by the template on the node: each task its own
TRAIN_ARGS='--steps 2$SLURM_ARRAY_TASK_ID '"$args" array sweep n3
sweep=$job
log "a sweep (array $sweep): task 1 crashed on n1, task 2 with other arguments ran cleanly on n3"
[ "$(grep -c "^[0-9]* n1 .*reason=crashed, suspected (SIGABRT" "$TRAINCTL_BAD_NODES")" -eq 2 ] ||
  fail "not both arrays' suspicions of n1: $(cat "$TRAINCTL_BAD_NODES")"
[ -z "$("$BUILD/bin/trainctl" bad-nodes list 2>/dev/null)" ] ||
  fail "a sweep whose other task ran cleanly elsewhere convicted n1: $(cat "$TRAINCTL_BAD_NODES")"
# Two programs crashed on n1 now (three arrays), but only the first ran anywhere else: no verdict yet.
not_yet() {
  [ "$(grep -c "^[0-9]* n1 .*reason=crashed, suspected (SIGABRT" "$TRAINCTL_BAD_NODES")" -eq 3 ] ||
    fail "not all three arrays' suspicions of n1: $(cat "$TRAINCTL_BAD_NODES")"
  [ -z "$("$BUILD/bin/trainctl" bad-nodes list 2>/dev/null)" ] ||
    fail "two one-node programs that crashed on n1, one never run elsewhere, kept it off"
  log "two programs crashed on n1, one of them never run elsewhere: n1 only suspected"
}
array prog2 n3 not_yet
second=$job
log "program 2 (array $second): crashed on n1, ran cleanly on n3"
log "bad-node memory: $(cat "$TRAINCTL_BAD_NODES")"
said="remembered n1 as a bad node: crashed in programs that ran cleanly on other nodes (array $first ran cleanly on n2, array $second ran cleanly on n3)"
# The line may reach the output file a moment after the array has left squeue.
convicted() { grep -qF "$said" "$TEST_DIR"/prog2-*.out; }
wait_for 30 "the conviction by contrast in program 2's output (the test's end prints it)" convicted
[ "$(cat "$TEST_DIR"/prog2-*.out | grep -cF "$said")" -eq 1 ] || fail "n1 was convicted more than once"
kept=$("$BUILD/bin/trainctl" bad-nodes list 2>"$TEST_DIR/why") || fail "trainctl bad-nodes failed: $(cat "$TEST_DIR/why")"
[ "$kept" = n1 ] || fail "trainctl bad-nodes keeps off '$kept', not n1: $(cat "$TEST_DIR/why")"
grep -q "keeping off n1: crashed in programs that ran cleanly on other nodes" "$TEST_DIR/why" ||
  fail "bad-nodes did not say why n1 is kept off: $(cat "$TEST_DIR/why")"
log "PASS: one program's crash on n1 was a suspicion; two programs that crashed on n1 and ran cleanly on n2 and n3 convicted it, once"
