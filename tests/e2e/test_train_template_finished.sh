#!/usr/bin/env bash
# slurm_templates/train.slurm when training finishes: the task that finishes cancels
# the array's pending tasks, so no allocation is wasted; an array submitted after the
# run finished ends in its first task, cancelling the rest.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
use_train_template "--steps 40 --step-time 0.05"

job=$(submit --array=1-4%1 --time=5 -J fin train.slurm)
log "submitted array $job: 40 steps, which task 1 finishes"
wait_for 150 "the array to end" array_gone "$job"
[ -e "$TEST_DIR/checkpoints/fin/FINISHED" ] || fail "training did not finish"
got=$(array_states "$job")
[ "$got" = "1:COMPLETED rest:CANCELLED" ] || fail "task states: $got"
grep -q "cancelling the array's pending tasks" "$TEST_DIR"/fin-*.out || fail "task 1 did not say it cancelled the rest"
log "task 1 finished training and cancelled tasks 2-4 before they started"

mkdir "$TEST_DIR/first" && mv "$TEST_DIR"/fin-*.out "$TEST_DIR/first/"
again=$(submit --array=1-3%1 --time=5 -J fin train.slurm)
wait_for 60 "the second array to end" array_gone "$again"
got=$(array_states "$again")
[ "$got" = "1:COMPLETED rest:CANCELLED" ] || fail "second array's task states: $got"
grep -q "training already finished" "$TEST_DIR"/fin-*.out || fail "the second array's task 1 did not say training had finished"
log "PASS: a finished run cancels the rest of its array, and a later array ends in its first task"
