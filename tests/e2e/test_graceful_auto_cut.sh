#!/usr/bin/env bash
# e2e-variants: cgroup
# e2e-modes: run
# --graceful-exit=auto learns from a save the time limit cut short (issue 34, item 1).
# A 2-task array of one rank, 1-minute limit, saves of 200 s: task 1 has seen no save,
# so it leaves half the limit (30 s); its deadline save is still running when SLURM
# enforces the limit (at EndTime or up to a minute later: slurmctld looks periodically)
# and is killed. Before, nothing recorded it and task 2 again said "no save seen yet",
# and so on for the whole array. Now the supervisor sees, at SIGTERM, a rank that agreed
# to the exit and still saves, says so in one line and records how long it has saved:
# task 2 starts from that lower bound (capped at half the limit here, as any lead is).
# srun writes the task's output to its own file (--output): once SLURM aborts a step at
# the time limit, srun stops relaying the step's output ("Job step aborted"), and the
# supervisor's lines from that moment reached the batch log only when they won the race
# (two CI runs lost them; users.md, "The last lines at a time limit", says so). With
# --output, slurmstepd writes the file on the node to the last line.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

export TRAINCTL_SAVE_TIMES_DIR=$TEST_DIR/save_times
# One rank, no launcher: the point is the supervisor at the time limit.
cat >"$TEST_DIR/job.sh" <<JOB
#!/bin/bash
srun --output=$TEST_DIR/task%a.out --open-mode=append $BUILD/bin/trainctl-run --graceful-exit=auto -- /usr/bin/python3 $TRAIN --ckpt-dir $TEST_DIR/ckpt \
  --steps 100000 --step-time 0.05 --save-time 200 --events "$TEST_DIR/events/rank{rank}.jsonl"
JOB
job=$(submit --array=1-2%1 -N1 --time=1 -o "$TEST_DIR/batch%a.out" "$TEST_DIR/job.sh")
log "submitted array $job: 1-minute limit, saves of 200 s"
wait_for 150 "task 2 to start" events_at_least start 2
wait_for 30 "task 2's supervisor to name its deadline" grep -q "deadline .*graceful exit auto" "$TEST_DIR/task2.out"
wait_for 60 "task 1 to leave COMPLETING" job_ended "${job}_1"
scancel "$job"
grep -q "a save was cut short after [0-9.]* s (the ranks were told to exit: deadline; one still saved at SIGTERM)" \
  "$TEST_DIR/task1.out" || fail "task 1 did not say its save was cut short: $(grep trainctl "$TEST_DIR/task1.out")"
n=$(grep -c "a save was cut short" "$TEST_DIR/task1.out")
[ "$n" = 1 ] || fail "task 1 said its save was cut short $n times: $(grep trainctl "$TEST_DIR/task1.out")"
[ "$(job_state "${job}_1")" = TIMEOUT ] || fail "task 1 ended $(job_state "${job}_1"), not TIMEOUT (its save was to be cut)"
recorded=$(sed -n 's/.* save_ms=\([0-9]*\)$/\1/p' "$TRAINCTL_SAVE_TIMES_DIR/$job" | sort -n | tail -n 1)
{ [ -n "$recorded" ] && [ "$recorded" -ge 10000 ]; } || fail "the store holds no cut save of 10 s or more: $(cat "$TRAINCTL_SAVE_TIMES_DIR/$job" 2>&1)"
line=$(grep -m 1 "deadline .*graceful exit auto" "$TEST_DIR/task2.out")
! grep -q "no save seen yet" <<<"$line" || fail "task 2 learnt nothing: $line"
grep -q "the longest save in this job array took" <<<"$line" || fail "task 2's deadline line: $line"
log "PASS: task 1's save was cut at the time limit after ${recorded} ms and recorded; task 2: ${line#*: }"
