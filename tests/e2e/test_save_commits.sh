#!/usr/bin/env bash
# e2e-modes: run
# A save that one rank does not commit. A 2-task array (--array=1-2%1) of 2 nodes x 2
# ranks under trainctl-run: a save-switch save that every rank commits (ctl.saved), then
# a notice (scancel --signal=USR1) whose save fails on rank 3 (it raises, as on a full
# disk; the loop's --fail-save 3:2). The supervisor of the ranks 0 and 1 says they
# committed it; the other says rank 3 did not, and names the last save it did commit;
# the run events keep both. trainctl.resume_path gives the save-switch save, and task 2
# resumes from it, not from the save rank 3 never finished; trainctl report counts that
# save as never finished and the steps after the save-switch save as lost.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

TRAIN_ARGS="--fail-save 3:2" supervised_job "$TEST_DIR/job.sh" --save-switch="$TEST_DIR/SAVE"
job=$(submit -N2 --ntasks-per-node=1 --time=10 --array=1-2%1 "${JOB_OPTS[@]}" -o "$TEST_DIR/job-%a.out" \
  "$TEST_DIR/job.sh")
log "submitted array $job"
wait_for 120 "4 ranks of task 1 started" events_at_least start 4
touch "$TEST_DIR/SAVE"
wait_for 60 "every rank to commit the save-switch save" events_at_least save 4
steps_of() { cat "$TEST_DIR"/events/rank*.jsonl | python3 -c 'import json, sys
print(" ".join(str(s) for s in sorted({json.loads(l)["step"] for l in sys.stdin if "\"'"$1"'\"" in l})))'; }
s1=$(steps_of save)
[[ $s1 =~ ^[0-9]+$ ]] || fail "the save-switch save was not at one step: $s1"
log "every rank committed the save at step $s1; scancel --signal=USR1 ${job}_1"
scancel --signal=USR1 "${job}_1"
wait_for 60 "task 1 to end" job_ended "${job}_1"
s2=$(steps_of exit)
{ [[ $s2 =~ ^[0-9]+$ ]] && [ "$s2" -gt "$s1" ]; } || fail "the ranks did not exit at one step after $s1: $s2"
grep -q "rank 3: its part of the save at step $s2 failed" "$TEST_DIR/job-1.out" ||
  fail "rank 3's save did not fail: $(cat "$TEST_DIR/job-1.out")"

said=$(grep -F "the save at step $s2 is" "$TEST_DIR/job-1.out")
grep -qE "the save at step $s2 is committed by every rank on [a-z0-9]+ \(0,1\), the last [0-9.]+ s after it was asked" \
  <<<"$said" || fail "the first node did not say that ranks 0 and 1 committed the save: $said"
# Rank 2 committed, unless the launcher ended it first for rank 3's failure.
grep -qE "the save at step $s2 is not committed by (rank 3|ranks 2 \([^)]*\), 3) \(its last committed save in this run: step $s1\) on [a-z0-9]+(; committed by 2)?: trainctl.resume_path goes back to the newest save every rank committed" \
  <<<"$said" || fail "the second node did not name rank 3 alone and its last committed save: $said"
log "the supervisors said: $said"
events=$HOME/.local/state/trainctl/runs/$job
grep -qE " committed step=$s2 ms=[0-9]+ node=[a-z0-9]+ ranks=2$" "$events" || fail "no committed event: $(cat "$events")"
grep -qE " uncommitted step=$s2 node=[a-z0-9]+ rank=3 last=$s1$" "$events" || fail "no uncommitted event: $(cat "$events")"

resume=$(python3 -c 'import sys, trainctl; print(trainctl.resume_path(sys.argv[1]))' "$TEST_DIR/ckpt")
[ "$resume" = "$TEST_DIR/ckpt/$(printf 'step_%08d' "$s1")" ] || fail "resume_path gave $resume, not the save at $s1"
[ -d "$TEST_DIR/ckpt/$(printf 'step_%08d' "$s2")" ] || fail "the half-made save at $s2 is not there to be passed over"
wait_for 120 "task 2 to start training" events_at_least start 8
resumed=$(cat "$TEST_DIR"/events/rank*.jsonl | python3 -c 'import json, sys
print(sorted({json.loads(l)["resumed_from"] for l in sys.stdin if "\"start\"" in l and "\"resumed_from\": null" not in l}))')
[ "$resumed" = "[$s1]" ] || fail "task 2 resumed from $resumed, not from the committed save at $s1"
scancel "$job"
wait_for 60 "task 2 to end" job_ended "${job}_2"
report=$("$BUILD/bin/trainctl" report --no-svg "$job") || fail "trainctl report $job failed: $report"
grep -qE "^  ${job}_1:.* save at step $s1 \(save-switch, [0-9.]+s\); save at step $s2 \(signal, not committed by rank 3\);" \
  <<<"$report" || fail "the report does not show the save rank 3 did not commit: $report"
grep -qE "^  ${job}_1:.* $((s2 - s1)) steps after step $s1 never saved(;|$)" <<<"$report" ||
  fail "the report does not count the steps after the committed save as lost: $report"
log "PASS: rank 3 did not commit the save at $s2 and the supervisor said so; task 2 resumed from the save at $s1"
