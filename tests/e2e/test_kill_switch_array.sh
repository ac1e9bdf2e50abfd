#!/usr/bin/env bash
# e2e-modes: run plugin
# e2e-variants: linuxproc cgroup
# The kill switch with --array=1-5%1: the running task saves and exits, and the array's
# pending tasks 2-5 are held (not cancelled, not started only to end at once); the
# task's log says so, once, and how to go on, and so does trainctl status. After `rm`
# of the switch and `scontrol release`, task 2 starts and resumes from task 1's save.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

supervised_job "$TEST_DIR/job.sh" --kill-switch="$TEST_DIR/KILL"
job=$(submit -N2 --ntasks-per-node=1 --time=10 --array=1-5%1 "${JOB_OPTS[@]}" -o "$TEST_DIR/job-%a.out" "$TEST_DIR/job.sh")
log "submitted array $job ($MODE)"
wait_for 120 "4 ranks of the first task started" events_at_least start 4
wait_for 60 "the first task's ranks past step 20" ranks_past "${job}_1" 4 20
log "touch the kill switch"
touch "$TEST_DIR/KILL"
wait_for 120 "the first task to end" job_ended "${job}_1"
read -r n steps reasons < <(exit_summary)
{ [ "$n" = 4 ] && [ "$steps" = 1 ] && [ "$reasons" = kill-switch ]; } || fail "first task: $n exits at $steps steps ($reasons)"
[ "$(job_state "${job}_1")" = COMPLETED ] || fail "the first task ended $(job_state "${job}_1")"
pending_reasons() { squeue -h -r -j "$job" -t PENDING -o "%i %r" 2>/dev/null | sort; }
# JobHeldAdmin where the job's user is root (this test's), JobHeldUser for everyone else.
held() { [ "$(pending_reasons | grep -cE ' JobHeld(User|Admin)$')" = 4 ]; }
wait_for 30 "tasks 2-5 to be held" held
said="kill switch $TEST_DIR/KILL: the pending tasks of array $job (4) are held; to go on: rm $TEST_DIR/KILL && scontrol release ${job}_[2-5]"
[ "$(grep -cF "$said" "$TEST_DIR/job-1.out")" = 1 ] || fail "the first task did not say once that the array is held: $(cat "$TEST_DIR/job-1.out")"
[ "$(events_count start)" -eq 4 ] || fail "later tasks started training: $(events_count start) starts"
log "tasks 2-5 are held: $(pending_reasons | tr '\n' ' ')"
# trainctl status says so too: the list names the held tasks, a held task how to go on.
listed=$("$BUILD/bin/trainctl" status 2>&1) || fail "trainctl status failed: $listed"
grep -F "held job" <<<"$listed" | grep -qF "${job}_[2-5] JobHeld" || fail "trainctl status does not list the held tasks: $listed"
one=$("$BUILD/bin/trainctl" status "${job}_2" 2>&1) && fail "trainctl status of a held task succeeded: $one"
grep -qF "the job is PENDING, not RUNNING (held: JobHeld" <<<"$one" || fail "trainctl status of a held task: $one"
grep -qF "then scontrol release ${job}_2)" <<<"$one" || fail "trainctl status of a held task: $one"

# What the line says to do, as it says it.
rm "$TEST_DIR/KILL"
scontrol release "${job}_[2-5]" || fail "scontrol release ${job}_[2-5] failed"
wait_for 120 "task 2 to start training" events_at_least start 8
resumed=$(cat "$TEST_DIR"/events/rank*.jsonl | python3 -c 'import json, sys
ev = [json.loads(l) for l in sys.stdin]
last = max(e["step"] for e in ev if e["event"] == "exit")
print(sorted({e["resumed_from"] for e in ev if e["event"] == "start" and e["resumed_from"] is not None}), last)')
[ "${resumed% *}" = "[${resumed#* }]" ] || fail "task 2 did not resume from task 1's save: resumed_from, last exit: $resumed"
log "PASS: the kill switch held tasks 2-5; after rm and scontrol release task 2 resumed from step ${resumed#* }"
