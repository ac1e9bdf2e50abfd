#!/usr/bin/env bash
# e2e-variants: cgroup
# e2e-modes: run
# The no-progress breaker on a crash loop of the program's memory: the template as users
# submit it (`sbatch --array=1-5%1 -N1 train.slurm`), its loop taking memory at step 20
# until the kernel's OOM killer ends it inside the job's cgroup (memory.limit_in_bytes:
# the cluster's MaxRAMPercent=8, 1.9 GB on a machine of 24). No
# process here sends SIGKILL: the kernel does. Tasks 1-3 die so; task 4 resumes where
# they did and ends at its first step with exit status 93, its supervisor saying the runs
# were killed by the OOM killer; task 5 never starts. Every death in the run events
# carries oom=1. (A SIGKILL from outside the program stops the count instead:
# test_no_progress, run mode.)
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
export TRAINCTL_RUN_EVENTS_DIR=$TEST_DIR/runs
use_train_template "--steps 100000 --step-time 0.05 --crash-on '*' --crash-at 20 --crash-how oom"
ev=$TEST_DIR/logs/oom
job=$(submit --array=1-5%1 -N1 --time=5 -J oom train.slurm)
log "submitted array $job: every task's loop takes memory at step 20 until the OOM killer ends it"
wait_for 300 "the array to end" array_gone "$job"
got=$(array_states "$job")
[ "$got" = "1:FAILED 2:FAILED 3:FAILED 4:FAILED 5:CANCELLED" ] ||
  fail "task states: $got; $(tail -n 5 "$TEST_DIR"/oom-*.out)"
task4=$(job_field "${job}_4" JobId)
[ "$(job_field "${job}_4" ExitCode)" = "93:0" ] || fail "task 4 exited $(job_field "${job}_4" ExitCode), not 93"
out4=$TEST_DIR/oom-$task4.out
jobs="$(job_field "${job}_1" JobId) $(job_field "${job}_2" JobId) $(job_field "${job}_3" JobId)"
grep -qF "(jobs $jobs) were killed by the OOM killer (out of memory) without getting past step 0: this run ends at its first step" "$out4" ||
  fail "task 4's supervisor did not name the OOM killer before the run: $(cat "$out4")"
grep -q "trainctl: exit at step 0: no-progress: " "$out4" || fail "rank 0 of task 4 did not say why it exits: $(cat "$out4")"
log "tasks 1-3 were OOM-killed at step 20; task 4 ended at step 0 with exit status 93 and said why"

# What the supervisors recorded: each task's first death a SIGKILL that the kernel's
# count names the OOM killer's, after step 19 (its last check()).
for j in $jobs; do
  grep -q "^[0-9]* job=$j death step=19 reason=SIGKILL .*oom=1" "$TEST_DIR/runs/$job" ||
    fail "job $j's death is not an OOM kill after step 19, its last check(): $(grep "job=$j death" "$TEST_DIR/runs/$job")"
done
crashes=$(cat "$ev"/rank*.jsonl | grep -c '"event": *"crash"') || true
[ "$crashes" -ge 3 ] || fail "$crashes crash events in the ranks' logs: the loop did not reach step 20 in each task"
! grep -h "as a suspect\|as a bad node" "$TEST_DIR"/oom-*.out || fail "an OOM kill made its node a suspect"
log "PASS: an OOM crash loop ends at its 4th task with exit 93, each death recorded as the OOM killer's"
