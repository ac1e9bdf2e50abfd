#!/usr/bin/env bash
# slurm_templates/train.slurm when training finishes: the task that finishes cancels
# the array's pending tasks, so no allocation is wasted; an array submitted after the
# run finished ends in its first task, cancelling the rest.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
use_train_template "--steps 40 --step-time 0.05"
# states ARRAY: "task:state" of each task that started, and "rest:STATE" for the pending
# tasks cancelled before they started (they stay in the array's one record, whose
# ArrayTaskId is then SLURM's NO_VAL - 1).
states() {
  scontrol show job -o "$1" | awk '{
    t = ""; st = ""
    for (i = 1; i <= NF; i++) {
      if ($i ~ /^ArrayTaskId=/) t = substr($i, 13)
      if ($i ~ /^JobState=/) st = substr($i, 10)
    }
    print (t == "4294967294" ? "rest" : t) ":" st
  }' | sort | tr '\n' ' ' | sed 's/ $//'
}
array_gone() { [ -z "$(squeue -h -j "$1" 2>/dev/null)" ]; }

job=$(submit --array=1-4%1 --time=5 -J fin train.slurm)
log "submitted array $job: 40 steps, which task 1 finishes"
wait_for 150 "the array to end" array_gone "$job"
[ -e "$TEST_DIR/checkpoints/fin/FINISHED" ] || fail "training did not finish"
got=$(states "$job")
[ "$got" = "1:COMPLETED rest:CANCELLED" ] || fail "task states: $got"
grep -q "cancelling the array's pending tasks" "$TEST_DIR"/fin-*.out || fail "task 1 did not say it cancelled the rest"
log "task 1 finished training and cancelled tasks 2-4 before they started"

mkdir "$TEST_DIR/first" && mv "$TEST_DIR"/fin-*.out "$TEST_DIR/first/"
again=$(submit --array=1-3%1 --time=5 -J fin train.slurm)
wait_for 60 "the second array to end" array_gone "$again"
got=$(states "$again")
[ "$got" = "1:COMPLETED rest:CANCELLED" ] || fail "second array's task states: $got"
grep -q "training already finished" "$TEST_DIR"/fin-*.out || fail "the second array's task 1 did not say training had finished"
log "PASS: a finished run cancels the rest of its array, and a later array ends in its first task"
