#!/usr/bin/env bash
# e2e-modes: plugin
# e2e-core: plugin
# e2e-torch: the Hugging Face Trainer callback, in a real Trainer over torch DDP
# Hugging Face Trainer with trainctl's TrainerCallback, torchrun 2 nodes x 2 ranks under
# the plugin, a 1-layer GPT-2 made in the test (no download): a touch of the save switch
# makes the Trainer write one checkpoint at a step all ranks agreed; the kill switch makes
# it write another and stop, train() returns on all 4 ranks at that step, the job is
# COMPLETED. Under --hang-timeout=10s the Trainer's 15 s evaluations (every 40 steps) are
# no hang: the callback marks them as trainctl's phase "eval". Where the system Python has no transformers (Debian 12; sid has
# python3-transformers) the test says so and skips.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

if ! /usr/bin/python3 -c 'import transformers' 2>/dev/null; then
  log "SKIP: /usr/bin/python3 has no transformers (apt-get install python3-transformers, Debian sid)"
  exit 77
fi
export KILL_SWITCH=$TEST_DIR/KILL SAVE_SWITCH=$TEST_DIR/SAVE TRAINCTL_POLL_INTERVAL=2s
out=$TEST_DIR/hf
port=$(free_port)
cat >"$TEST_DIR/job.sh" <<JOB
#!/bin/bash
srun --ntasks-per-node=1 bash -c 'exec $(launcher_words "$port") $SRC/tests/e2e/hf_train.py $out $TEST_DIR/events'
JOB
job=$(submit -N2 --ntasks-per-node=1 --time=10 --kill-switch="$KILL_SWITCH" --save-switch="$SAVE_SWITCH" \
  --hang-timeout=10s -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job ($(/usr/bin/python3 -c 'import transformers; print("transformers", transformers.__version__)' 2>/dev/null))"
wait_for 180 "4 ranks training" events_at_least start 4
wait_for 180 "the first evaluation on every rank" events_at_least evaluated 4
if grep -q 'hang: rank' "$TEST_DIR/job.out"; then fail "an evaluation was taken for a hang: $(grep 'hang:' "$TEST_DIR/job.out")"; fi
grep -q "hang: a rank in phase 'eval' counts as hung after 30m" "$TEST_DIR/job.out" ||
  fail "the evaluation was not marked as a phase: $(grep 'hang:' "$TEST_DIR/job.out")"
log "a 15 s evaluation under a 10 s hang timeout: no finding"
checkpoints() { find "$out" -maxdepth 1 -name 'checkpoint-*' -printf '%f\n' 2>/dev/null | sort -t- -k2 -n; }
one_checkpoint() { [ "$(checkpoints | wc -l)" -ge 1 ]; }

log "touching the save switch"
touch "$SAVE_SWITCH"
wait_for 60 "a checkpoint" one_checkpoint
sleep 3
[ "$(checkpoints | wc -l)" -eq 1 ] || fail "expected one checkpoint, got: $(checkpoints | tr '\n' ' ')"
saved=$(checkpoints)
log "the Trainer wrote $saved"

log "touching the kill switch"
touch "$KILL_SWITCH"
wait_for 90 "the job to end" job_ended "$job"
[ "$(job_state "$job")" = COMPLETED ] || fail "job ended $(job_state "$job"), not COMPLETED"
read -r n steps reasons < <(exit_summary)
{ [ "$n" = 4 ] && [ "$steps" = 1 ]; } || fail "expected 4 ranks to stop at one step; got $n ranks at $steps steps"
[ "$reasons" = kill-switch ] || fail "expected reason 'kill-switch', got '$reasons'"
step=$(python3 -c 'import json, sys; print(json.loads(open(sys.argv[1]).readlines()[-1])["step"])' "$TEST_DIR/events/rank0.jsonl")
[ -d "$out/checkpoint-$step" ] || fail "no checkpoint-$step after the stop; have: $(checkpoints | tr '\n' ' ')"
[ "$(checkpoints | wc -l)" -eq 2 ] || fail "expected 2 checkpoints, got: $(checkpoints | tr '\n' ' ')"
committed=$(find "$out/checkpoint-$step" -maxdepth 1 -name '.trainctl-committed.*' -printf '%f\n' | sort | tr '\n' ' ')
[ "$committed" = ".trainctl-committed.0 .trainctl-committed.1 .trainctl-committed.2 .trainctl-committed.3 " ] ||
  fail "checkpoint-$step was not committed by every rank: $committed"
resume=$(python3 -c 'import sys, trainctl; print(trainctl.resume_path(sys.argv[1]))' "$out")
[ "$resume" = "$out/checkpoint-$step" ] || fail "resume_path gave $resume, not checkpoint-$step"
log "PASS: one agreed save ($saved), then all 4 ranks stopped at step $step with checkpoint-$step, committed by each and resume_path's; job COMPLETED"
