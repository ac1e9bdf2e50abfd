#!/usr/bin/env bash
# e2e-modes: run
# --graceful-exit=auto on a 2-task array (2 nodes x 2 torchrun ranks, 3-minute limit),
# whose saves take 20 s in task 1 and 30 s in task 2:
#   task 1 has no save to learn from: the first-task default, capped at half the time
#     limit (90 s); its own kill switch (KILL_1) ends it early, and that save (20 s) is
#     recorded for the array: any finished save teaches the deadline, and the test need
#     not wait out task 1's 90 s;
#   task 2 starts from it: 20 s x1.5 + 30 s, about 1 min; a save-switch save that takes
#     30 s then moves its deadline earlier (76 s before EndTime), and the log says so;
#   both tasks end COMPLETED, their last saves finished, never killed at the time limit.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

export TRAINCTL_SAVE_TIMES_DIR=$TEST_DIR/save_times
# Saves of 20 s in task 1, 30 s in task 2, and each task its own kill switch (KILL_1
# ends task 1 only), expanded by the task's shell.
# shellcheck disable=SC2016
TRAIN_ARGS='--save-time $((10 * SLURM_ARRAY_TASK_ID + 10))' supervised_job "$TEST_DIR/job.sh" \
  --kill-switch="$TEST_DIR/KILL_\$SLURM_ARRAY_TASK_ID" --save-switch="$TEST_DIR/SAVE" --graceful-exit=auto
job=$(submit --array=1-2%1 -N2 --ntasks-per-node=1 --time=3 -o "$TEST_DIR/task%a.out" "$TEST_DIR/job.sh")
log "submitted array $job: saves take 20 s (task 1), 30 s (task 2)"
store=$TRAINCTL_SAVE_TIMES_DIR/$job

wait_for 120 "task 1's ranks" events_at_least start 4
wait_for 60 "task 1's ranks past step 20" ranks_past "${job}_1" 4 20
touch "$TEST_DIR/KILL_1"
log "task 1: touched its kill switch; its save takes 20 s"
wait_for 120 "task 1 to end" job_ended "${job}_1"
[ "$(job_state "${job}_1")" = COMPLETED ] || fail "task 1 ended $(job_state "${job}_1")"
# The kill switch held the array's pending task 2; this test's switches are per task,
# so task 2 runs once released.
held() { squeue -h -r -j "$job" -t PENDING -o %r 2>/dev/null | grep -qxE 'JobHeld(User|Admin)'; }  # Admin: root's job
wait_for 30 "task 2 to be held" held
grep -qF "are held; to go on: rm $TEST_DIR/KILL_1 && scontrol release ${job}_2" "$TEST_DIR/task1.out" ||
  fail "task 1 did not say how to go on: $(grep -F 'kill switch' "$TEST_DIR/task1.out")"
scontrol release "${job}_2" || fail "scontrol release ${job}_2 failed"
grep -E "deadline .* graceful exit auto: 90s \(no save seen yet in this job array: 10m, at most half the time limit\)" \
  "$TEST_DIR/task1.out" >/dev/null || fail "task 1 did not take the first-task default, capped at half the limit"
[ "$(grep -c '"why": "kill-switch"' "$TEST_DIR"/events/rank*.jsonl | awk -F: '{ s += $2 } END { print s }')" -eq 4 ] ||
  fail "task 1: not every rank finished its kill-switch save"
[ -s "$store" ] || fail "task 1's save time was not recorded in $store"
longest=$(grep -o 'save_ms=[0-9]*' "$store" | cut -d= -f2 | sort -n | tail -1)
log "task 1 recorded a save of $longest ms: $(head -1 "$store")"
if [ "$longest" -lt 19500 ] || [ "$longest" -gt 30000 ]; then fail "task 1's save was recorded as $longest ms, not about 20 s"; fi

wait_for 120 "task 2's ranks" events_at_least start 8
# The supervisors log the deadline once they have read EndTime, which can come after the
# ranks start.
wait_for 60 "task 2's supervisors to log the auto deadline" grep -qE "deadline .* graceful exit auto: " "$TEST_DIR/task2.out"
line=$(grep -m1 -E "deadline .* graceful exit auto: " "$TEST_DIR/task2.out")
log "task 2: $line"
grep -qE "the longest save in this job array took (19\.[5-9]|2[0-9]\.[0-9]) s: x1\.5 \+ 30s margin" <<<"$line" ||
  fail "task 2 did not start from task 1's save"
touch "$TEST_DIR/SAVE"
log "touched the save switch: this save takes 30 s"
wait_for 90 "the deadline to move" grep -qE "a save took (29\.[5-9]|3[0-9]\.[0-9]) s: deadline now .* graceful exit auto: 7[5-9]s" \
  "$TEST_DIR/task2.out"
log "task 2: $(grep -E 'a save took .* deadline now' "$TEST_DIR/task2.out" | head -1)"
wait_for 200 "task 2 to end" job_ended "${job}_2"
[ "$(job_state "${job}_2")" = COMPLETED ] || fail "task 2 ended $(job_state "${job}_2"), not COMPLETED"
[ "$(events_count exit)" -eq 8 ] || fail "$(events_count exit) of 8 rank exits"
final=$(grep -c '"why": "deadline"' "$TEST_DIR"/events/rank*.jsonl | awk -F: '{ s += $2 } END { print s }')
[ "$final" -eq 4 ] || fail "$final of task 2's 4 deadline saves finished"
longest=$(grep -o 'save_ms=[0-9]*' "$store" | cut -d= -f2 | sort -n | tail -1)
[ "$longest" -ge 29500 ] || fail "task 2's longer save was not recorded (longest $longest ms)"
deadlines=$(grep -oE "graceful exit auto: [0-9]+s" "$TEST_DIR/task2.out" | sort -u | tr '\n' ' ')
log "figure: task 2's graceful exits: $deadlines"
log "PASS: auto took the first-task default, then 20 s x1.5 + 30 s from task 1's kill-switch save; a 30 s save moved the deadline; both tasks saved and completed"
