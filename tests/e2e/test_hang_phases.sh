#!/usr/bin/env bash
# e2e-modes: plugin
# A quiet rank is judged by the phase it is in (issue 32). Two jobs at once:
#
# Job A, 2 nodes x 2 torchrun ranks of a DDP model (a gradient all_reduce every step),
# --hang-timeout=10s --hang-phase-timeout=save=40s --hang-action=end-step:
#   - a 25 s evaluation every 100 steps, marked with ctl.phase("eval") on every rank
#     (rank 0's peers wait in a barrier): no finding over 3 of them; the first is judged by
#     the first-time budget (30m), the next by 3 x the first's duration, and the log says so;
#   - a 25 s save after a touch of the save switch (rank 0 writes, the others wait in a
#     barrier): no finding, training goes on;
#   - the next save never finishes (a stuck file system): found once past the save budget
#     (40 s), every rank's stacks say "saving", and end-step ends the step.
#
# Job B, a 2-task array (1 node x 2 ranks) with --hang-timeout=auto: task 1 says it starts
# from the first-time budget and records its longest time between agreements and its
# evaluations; task 2 starts from what task 1 recorded, and says so.
# Prints the false findings (must be 0) and the time from the save budget's end to the
# stacks on disk.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

export TRAINCTL_SAVE_TIMES_DIR=$TEST_DIR/save_times
# Job B first: its own events and checkpoints per task, 300 steps, a short evaluation.
STEPS=300 CKPT_DIR="$TEST_DIR/ckptB_\$SLURM_ARRAY_TASK_ID" EVENTS_DIR=$TEST_DIR/eventsB \
  TRAIN_ARGS="--eval-every 100 --eval-time 3" supervised_job "$TEST_DIR/jobB.sh" --hang-timeout=auto
jobB=$(submit --array=1-2%1 -N1 --ntasks-per-node=1 --time=10 "${JOB_OPTS[@]}" -o "$TEST_DIR/jobB_%a.out" \
  "$TEST_DIR/jobB.sh")
log "submitted array $jobB (--hang-timeout=auto, 2 tasks of 300 steps)"

# Real torch DDP here: a gradient all_reduce every step, around the long phases.
E2E_TORCH=1 TRAIN_ARGS="--ddp --eval-every 100 --eval-time 25 --save-time 25 --stuck-save 2" \
  supervised_job "$TEST_DIR/job.sh" --hang-timeout=10s --hang-phase-timeout=save=40s --hang-action=end-step \
  --save-switch="$TEST_DIR/SAVE"
job=$(submit -N2 --ntasks-per-node=1 --time=10 "${JOB_OPTS[@]}" -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job: 25 s evaluations every 100 steps, hang timeout 10 s"

findings() { grep -c 'hang: rank' "$TEST_DIR/job.out" || true; }
wait_for 120 "4 ranks started" events_at_least start 4
wait_for 240 "the 3rd evaluation to begin on every rank" events_at_least eval 12
# The 3rd evaluation (25 s, at step 300) has ended on a rank once it checked step 301.
wait_for 90 "the 3rd evaluation to end on every rank" ranks_past "$job" 4 300
[ "$(findings)" -eq 0 ] || fail "a hang was found during the evaluations: $(grep 'hang:' "$TEST_DIR/job.out")"
grep -q "hang: a rank in phase 'eval' counts as hung after 30m (no 'eval' phase has finished yet in this job array)" \
  "$TEST_DIR/job.out" || fail "the first evaluation's budget was not said: $(grep 'hang:' "$TEST_DIR/job.out")"
learnt=$(grep -o "hang: a rank in phase 'eval' counts as hung after [^ ]* (3 x the longest 'eval' phase in this job array ([0-9.]* s), at least 10s)" \
  "$TEST_DIR/job.out" | head -1) || fail "the learnt evaluation budget was not said: $(grep 'hang:' "$TEST_DIR/job.out")"
log "$learnt"
secs=$(sed -E "s/.*array \(([0-9.]*) s\).*/\1/" <<<"$learnt")
python3 -c "import sys; s = float(sys.argv[1]); sys.exit(0 if 25.0 <= s < 40 else 1)" "$secs" ||
  fail "the evaluation was learnt as $secs s, not about 25 s"

touch "$TEST_DIR/SAVE"
log "touched the save switch: this save takes 25 s"
wait_for 120 "the 25 s save on every rank" events_at_least save 4
sleep 5
[ "$(findings)" -eq 0 ] || fail "a hang was found during the 25 s save: $(grep 'hang:' "$TEST_DIR/job.out")"
grep -q "hang: a rank saving counts as hung after 40s (--hang-phase-timeout save=40s)" "$TEST_DIR/job.out" ||
  fail "the save budget was not said: $(grep 'hang:' "$TEST_DIR/job.out")"
false_findings=$(findings)
log "figure: false hang findings over 3+ evaluations of 25 s and a 25 s save (hang timeout 10 s): $false_findings"

touch "$TEST_DIR/SAVE"
log "touched the save switch again: this save never finishes"
wait_for 150 "the stuck save to be found" grep -q "has been saving for" "$TEST_DIR/job.out"
line=$(grep -o "hang: rank .* has been saving for .*" "$TEST_DIR/job.out" | head -1)
log "$line"
grep -q "past its budget of 40s (--hang-phase-timeout save=40s" <<<"$line" || fail "the finding does not name the budget"
dir=$TRAINCTL_LOG_DIR/trainctl-$(id -un)/stacks-$job
wait_for 60 "stacks of 4 ranks" bash -c "[ \$(ls $dir/rank*.txt 2>/dev/null | wc -l) -ge 4 ]"
for r in 0 1 2 3; do
  grep -q "has been saving for" "$dir/rank$r.txt" || fail "rank $r's stacks do not say it was saving: $(head -3 "$dir/rank$r.txt")"
done
# The first node's job-wide line comes once every node's files are there (it reads them
# back), a moment after the fourth rank's file.
wait_for 30 "the job-wide summary line" bash -c "grep -vq ' only ' '$dir/summary.txt'"
grep -q "(saving)" "$dir/summary.txt" || fail "the summary does not say saving: $(cat "$dir/summary.txt")"
[ "$(grep -vc '^.* only ' "$dir/summary.txt")" -eq 1 ] || fail "not one job-wide summary line: $(cat "$dir/summary.txt")"
took=$(grep -o 'hang: stacks of 2 of 2 ranks saved in [^ ]* after [0-9]* ms' "$TEST_DIR/job.out" | grep -o '[0-9]* ms' | sort -n | tail -1)
log "figure: the stuck save was found $(grep -o 'saving for [0-9.]* s' <<<"$line") after the save decision (budget 40 s); each node's stacks took at most $took"
wait_for 60 "the job to end (end-step)" job_ended "$job"
grep -q "hang: ending the step" "$TEST_DIR/job.out" || fail "end-step did not run"
[ "$(grep -c 'hang: rank' "$TEST_DIR/job.out")" -le 2 ] || fail "more than one finding per node: $(grep 'hang: rank' "$TEST_DIR/job.out")"

# Job B: task 1 learnt, task 2 starts from it.
wait_for 240 "array $jobB to end" job_ended "${jobB}_2"
for t in 1 2; do
  [ "$(job_state "${jobB}_$t")" = COMPLETED ] || fail "task $t of $jobB ended $(job_state "${jobB}_$t")"
done
grep -q "hang: a rank training counts as hung after 30m (--hang-timeout=auto, nothing learnt yet in this job array)" \
  "$TEST_DIR/jobB_1.out" || fail "task 1 did not start from the first-time budget: $(grep 'hang:' "$TEST_DIR/jobB_1.out")"
store=$TRAINCTL_SAVE_TIMES_DIR/$jobB
grep -q ' phase=:training ms=' "$store" || fail "task 1 recorded no time between agreements: $(cat "$store")"
grep -q ' phase=eval ms=' "$store" || fail "task 1 recorded no evaluation: $(cat "$store")"
auto=$(grep -o "hang: a rank training counts as hung after .*" "$TEST_DIR/jobB_2.out" | head -1) ||
  fail "task 2 said no training budget"
log "task 2: $auto"
grep -qE "after 1m \(--hang-timeout=auto: 5 x the longest time between agreements in this job array \([0-9.]+ s\), at least 1m\)" \
  <<<"$auto" || fail "task 2 did not start from task 1's times"
grep -q "hang: rank" "$TEST_DIR"/jobB_*.out && fail "a hang was found in the auto array: $(grep 'hang: rank' "$TEST_DIR"/jobB_*.out)"
log "PASS: no finding over evaluations and a save longer than the hang timeout; the stuck save found past its budget, stacks say saving; auto learnt across tasks"
