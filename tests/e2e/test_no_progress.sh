#!/usr/bin/env bash
# e2e-modes: run plugin
# The no-progress breaker (issue 35) with the template as users submit it:
# `sbatch --array=1-6%1 -N1 train.slurm`, a loop that dies before any save.
# Plugin: by SIGSEGV at steps 20, 33 and 29, as a node failing at random times would.
# Tasks 1-3 die (each suspecting its node; a one-node job: nothing to compare with, so
# no verdict); task 4 resumes where they did and ends at its first step: one line from
# its supervisor and one from rank 0, no save, exit status 93. Tasks 5 and 6 are
# cancelled before they start. The suspicions stay (the runs died at different steps),
# and the --on-notice hook ran once, with TRAINCTL_NOTICE=no-progress.
# Run: each rank is SIGKILLed at step 20 from outside the program (as an admin's kill -9
# or a node health check would; no OOM kill, which the kernel counts in the job's
# cgroup): no failure of the program, so the breaker never fires and all 4 tasks run;
# each death is recorded with oom=0. (The OOM killer's SIGKILL counts: test_oom_breaker.)
# Then (plugin) the commonest crash loop: every task dies before its first check() (a
# bad config, a checkpoint that fails to load): the third task ends with exit status 93
# and the rest of the array is cancelled, but for task 1, requeued and pending again;
# these runs all died at one place, so their nodes are forgiven.
# Then (run mode) an array whose tasks crash too, but each after a save the save switch
# asked for: each task resumes later than the one before, and the breaker never fires.
# Its 4 crashes are interruptions: trainctl report advises a checkpoint interval, checked
# against Young/Daly computed from the ranks' own log (within 2 %).
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
export TRAINCTL_RUN_EVENTS_DIR=$TEST_DIR/runs
ev=$TEST_DIR/logs/nop
if [ "$MODE" = run ]; then
  use_train_template "--steps 100000 --step-time 0.05 --crash-on '*' --crash-at 20 --crash-how sigkill"
  job=$(submit --array=1-4%1 -N1 --time=5 -J nop train.slurm)
  log "submitted array $job (run): every task's ranks are SIGKILLed from outside at step 20, before any save"
  wait_for 300 "the array to end" array_gone "$job"
  got=$(array_states "$job")
  [ "$got" = "1:FAILED 2:FAILED 3:FAILED 4:FAILED" ] || fail "task states: $got; $(tail -n 5 "$TEST_DIR"/nop-*.out)"
  ! grep -h "no progress" "$TEST_DIR"/nop-*.out || fail "the breaker counted runs killed from outside the program"
  for t in 1 2 3 4; do
    j=$(job_field "${job}_$t" JobId)
    grep -q "^[0-9]* job=$j death step=19 reason=SIGKILL .*oom=0" "$TEST_DIR/runs/$job" ||
      fail "task $t's death is not a kill from outside after step 19, its last check(): $(grep "job=$j death" "$TEST_DIR/runs/$job")"
  done
  ! grep -h "as a suspect" "$TEST_DIR"/nop-*.out || fail "a run killed from outside made its node a suspect"
  log "4 tasks killed from outside at step 20, each death recorded with oom=0: no breaker, no suspect"
else
  # At steps 20, 33 and 29 in tasks 1-3, as a node failing at random times would.
  use_train_template "--steps 100000 --step-time 0.05 --crash-on '*' --crash-at 20,33,29 --crash-how segv"
  # shellcheck disable=SC2016  # expanded when the hook runs
  printf '#!/bin/sh\necho "$TRAINCTL_NOTICE $TRAINCTL_NOTICE_DETAIL" >>%s/hook.log\n' "$TEST_DIR" >"$TEST_DIR/hook.sh"
  chmod 755 "$TEST_DIR/hook.sh"
  opts=(--graceful-exit=1 --kill-switch --save-switch --on-notice="$TEST_DIR/hook.sh")
  job=$(submit --array=1-6%1 -N1 --time=5 -J nop "${opts[@]}" train.slurm)
  log "submitted array $job (plugin): every task's loop dies (SIGSEGV) at step 20, 33, 29, before any save"
  wait_for 420 "the array to end" array_gone "$job"
  got=$(array_states "$job")
  got=${got/5:CANCELLED 6:CANCELLED/rest:CANCELLED}  # records of their own once the template set their ExcNodeList
  [ "$got" = "1:FAILED 2:FAILED 3:FAILED 4:FAILED rest:CANCELLED" ] ||
    fail "task states: $got; $(tail -n 5 "$TEST_DIR"/nop-*.out)"
  for t in 1 2 3; do
    code=$(job_field "${job}_$t" ExitCode)
    [ "$code" != "93:0" ] || fail "task $t, which crashed, exited 93"
  done
  task4=$(job_field "${job}_4" JobId)
  [ "$(job_field "${job}_4" ExitCode)" = "93:0" ] || fail "task 4 exited $(job_field "${job}_4" ExitCode), not 93"
  out4=$TEST_DIR/nop-$task4.out
  grep -qF "(jobs $(job_field "${job}_1" JobId) $(job_field "${job}_2" JobId) $(job_field "${job}_3" JobId)) failed without getting past step 0: this run ends at its first step" "$out4" ||
    fail "task 4's supervisor did not say why before the run: $(cat "$out4")"
  grep -qF "failed without getting past step 0, and this one resumed there too: this run ends with exit status 93" "$out4" ||
    fail "task 4's supervisor did not say how the runs ended: $(cat "$out4")"
  grep -q "trainctl: exit at step 0: no-progress: " "$out4" || fail "rank 0 of task 4 did not say why it exits: $(cat "$out4")"
  [ "$(cat "$TEST_DIR"/nop-*.out | grep -c 'this run ends with exit status 93')" -eq 1 ] ||
    fail "not one task ended on the breaker: $(grep -h 'exit status 93' "$TEST_DIR"/nop-*.out)"
  grep -q "this run ends with exit status 93; cancelling the array's pending tasks" "$out4" || fail "task 4 did not end the array"
  log "tasks 1-3 died (SIGSEGV); task 4 ended at step 0 with exit status 93 and said why; tasks 5-6 never started"

  # What the ranks did: 6 crashes (2 ranks x 3 tasks), then task 4's 2 ranks exit at step 0
  # without a save.
  read -r crashes exits reasons steps saves < <(python3 - "$ev" <<'PY'
import glob, json, sys
ev = [json.loads(l) for f in glob.glob(sys.argv[1] + "/rank*.jsonl") for l in open(f)]
ex = [e for e in ev if e["event"] == "exit"]
print(sum(e["event"] == "crash" for e in ev), len(ex), ",".join(sorted({e["reason"] for e in ex})) or "-",
      ",".join(sorted({str(e["step"]) for e in ex})) or "-", sum(e["event"] == "save" for e in ev))
PY
  )
  [ "$crashes" = 6 ] || fail "$crashes crashes, not 6 (2 ranks x tasks 1-3)"
  { [ "$exits" = 2 ] && [ "$reasons" = no-progress ] && [ "$steps" = 0 ]; } ||
    fail "task 4's ranks: $exits exits, reasons $reasons, at steps $steps"
  [ "$saves" = 0 ] || fail "$saves saves: the breaker's exit must not save"
  ! grep -h "as a bad node" "$TEST_DIR"/nop-*.out || fail "a one-node crash was taken for its node's fault"
  # A crash in a one-node job has nothing to compare with: a suspicion, never a verdict.
  grep -qh "as a suspect (crashed, suspected (SIGSEGV in a rank of a one-node job" "$TEST_DIR"/nop-*.out ||
    fail "no task suspected its node: $(grep -h 'remembered' "$TEST_DIR"/nop-*.out)"
  # The runs died at steps 20, 33 and 29: a node failing at random times looks like
  # that, so its findings stay (only suspicions here: they keep no node off).
  grep -q "kept the crash findings against .*: " "$out4" || fail "task 4 did not keep the findings: $(cat "$out4")"
  ! grep -q "forgave " "$out4" || fail "task 4 forgave the nodes of runs that died at different steps: $(cat "$out4")"
  [ "$(grep -c "crashed, suspected (SIGSEGV" "$TRAINCTL_BAD_NODES")" -eq 3 ] ||
    fail "not the 3 tasks' suspicions remembered: $(cat "$TRAINCTL_BAD_NODES")"
  [ -z "$("$BUILD/bin/trainctl" bad-nodes 2>/dev/null)" ] || fail "trainctl bad-nodes keeps a node off for suspicions"
  log "runs that died at different steps keep their findings: $(grep -o 'kept the crash findings against [^:]*' "$out4")"
fi
if [ "$MODE" = plugin ]; then
  [ "$(wc -l <"$TEST_DIR/hook.log")" -eq 1 ] || fail "the hook ran $(wc -l <"$TEST_DIR/hook.log") times: $(cat "$TEST_DIR/hook.log")"
  grep -q "^no-progress jobs [0-9 ]* failed without getting past step 0" "$TEST_DIR/hook.log" ||
    fail "the hook was told: $(cat "$TEST_DIR/hook.log")"
  log "--on-notice ran once: $(cat "$TEST_DIR/hook.log")"

  # Every task dies before its first check(): no step to compare, and the third in a
  # row ends the array as it fails. Task 1, requeued after its run (held, as a preempted
  # task waits for nodes), is pending again when that happens: it is spared.
  use_train_template "--steps 1000 --step-time 0.05 --crash-on '*' --crash-at 0"
  pre=$(submit --hold --array=1-5%1 -N1 --time=5 -J pre "${opts[@]}" train.slurm)
  scontrol release "${pre}_1" || fail "could not release task 1 of $pre"
  log "submitted array $pre: every task's loop aborts before its first check()"
  wait_for 120 "task 1 to end" job_ended "${pre}_1"
  scontrol requeuehold "${pre}_1" || fail "could not requeue task 1 of $pre"
  [ "$(job_field "${pre}_1" Restarts)" = 1 ] || fail "task 1 requeued: Restarts=$(job_field "${pre}_1" Restarts)"
  scontrol release "${pre}_[2-5]" || fail "could not release tasks 2-5 of $pre"
  wait_for 240 "task 3 to end" job_ended "${pre}_3"
  only_task1_left() { [ -z "$(squeue -h -r -t PENDING,RUNNING -j "$pre" -o %i | grep -v "^${pre}_1$" || true)" ]; }
  wait_for 60 "tasks 4-5 to go" only_task1_left
  got=$(array_states "$pre")
  got=${got/4:CANCELLED 5:CANCELLED/rest:CANCELLED}
  [ "$got" = "1:PENDING 2:FAILED 3:FAILED rest:CANCELLED" ] ||
    fail "task states: $got; $(tail -n 5 "$TEST_DIR"/pre-*.out)"
  [ "$(job_field "${pre}_2" ExitCode)" != "93:0" ] || fail "task 2 exited 93: only the third run in a row may"
  [ "$(job_field "${pre}_3" ExitCode)" = "93:0" ] || fail "task 3 exited $(job_field "${pre}_3" ExitCode), not 93"
  out3=$TEST_DIR/pre-$(job_field "${pre}_3" JobId).out
  grep -qF "no progress: jobs $(job_field "${pre}_1" JobId) $(job_field "${pre}_2" JobId) $(job_field "${pre}_3" JobId) failed before their first check(), this one too: this run ends with exit status 93; cancelling the array's pending tasks" "$out3" ||
    fail "task 3's supervisor did not say why: $(cat "$out3")"
  grep -qF "left pending: ${pre}_1, requeued after a run of its own" "$out3" || fail "task 3 did not spare task 1: $(cat "$out3")"
  [ "$(wc -l <"$TEST_DIR/hook.log")" -eq 2 ] || fail "the hook ran $(wc -l <"$TEST_DIR/hook.log") times in all: $(cat "$TEST_DIR/hook.log")"
  # These runs all died before any step, the same place each time: the program's crash.
  # Their nodes are forgiven; the first array's findings (random steps) stay.
  grep -q "forgave .*: the runs died at the same step each time" "$out3" || fail "task 3 forgave no node: $(cat "$out3")"
  ! grep -q "SIGABRT" "$TRAINCTL_BAD_NODES" || fail "the crash loop's suspicions were not forgiven: $(cat "$TRAINCTL_BAD_NODES")"
  [ "$(grep -c "crashed, suspected (SIGSEGV" "$TRAINCTL_BAD_NODES")" -eq 3 ] ||
    fail "the first array's suspicions went too: $(cat "$TRAINCTL_BAD_NODES")"
  scancel "$pre"
  log "3 tasks died before their first check(); the third exited 93, the rest never started but the requeued task 1; their nodes forgiven"
fi

if [ "$MODE" = run ]; then
  # Each task saves once (its save switch) before it crashes 6 s after its resume: the
  # next task resumes later, so no run went nowhere.
  use_train_template "--steps 100000 --step-time 0.1 --save-time 1 --crash-on '*' --crash-after 60 --crash-how exception"
  ev=$TEST_DIR/logs/sav
  saved=$(submit --array=1-4%1 -N1 --time=5 -J sav train.slurm)
  log "submitted array $saved: every task crashes 60 steps after its resume, after one save switch"
  for k in 1 2 3 4; do
    wait_for 120 "task $k to start" template_events_at_least "$ev" start $((2 * k))
    touch "$TEST_DIR/save-switch-sav"
    wait_for 60 "task $k to save" template_events_at_least "$ev" save $((2 * k))
  done
  wait_for 120 "the second array to end" array_gone "$saved"
  got=$(array_states "$saved")
  [ "$got" = "1:FAILED 2:FAILED 3:FAILED 4:FAILED" ] || fail "second array's task states: $got"
  ! grep -h "no progress" "$TEST_DIR"/sav-*.out || fail "the breaker acted on an array whose every task saved"
  starts=$(cat "$ev"/rank*.jsonl | python3 -c 'import json,sys; print(" ".join(str(s) for s in sorted({json.loads(l)["step"] for l in sys.stdin if "\"start\"" in l})))')
  [ "$(wc -w <<<"$starts")" -eq 4 ] || fail "the tasks resumed at steps $starts: not 4 different steps"
  log "4 tasks resumed at steps $starts, each later than the one before; no breaker"

  # Four crashes after a save: enough for trainctl report to advise how often to save.
  # Its advice against Young/Daly computed here from the ranks' own logs: each save's
  # duration, and the training from each task's first step to its crash.
  if grep -q '^AccountingStorageType=accounting_storage/slurmdbd' "$SLURM_CONF"; then
    sacct_done() { [ "$(sacct -X -n -P -j "$saved" -o State | grep -c FAILED)" -eq 4 ]; }
    wait_for 60 "sacct to have the 4 tasks' ends" sacct_done
  fi
  "$BUILD/bin/trainctl" report --no-svg "$saved" | grep -A3 '^checkpoints' || fail "trainctl report failed"
  "$BUILD/bin/trainctl" report --json --no-svg "$saved" >"$TEST_DIR/report.json" || fail "trainctl report --json failed"
  python3 - "$TEST_DIR/report.json" "$ev/rank0.jsonl" <<'PY' || fail "the advised interval is not Young/Daly's from the program's own log"
import json, math, statistics, sys
cp = json.load(open(sys.argv[1]))["checkpoints"]
runs, run = [], None
for e in map(json.loads, open(sys.argv[2])):
    if e["event"] == "start":
        run = {"first": e["time"] + 0.1, "saves": []}
        runs.append(run)
    elif e["event"] == "save":
        run["saves"].append((e["time"] - e["took"], e["took"]))
    elif e["event"] == "crash":
        run["crash"] = e["time"]
assert len(runs) == 4 and all("crash" in r and len(r["saves"]) == 1 for r in runs), runs
training = sum(r["crash"] - r["first"] for r in runs)
save = statistics.median(took for r in runs for _, took in r["saves"])
mtbi = training / 4
advised = math.sqrt(2 * save * mtbi) - save
now = statistics.median(r["saves"][0][0] - r["first"] for r in runs)
print("checkpoint interval: save %.3f s, %.1f s of training, 4 interruptions: advised %.2f s (program's log) vs %s "
      "(report); saving every %.2f s now (program's log) vs %s (report)" % (
          save, training, advised, cp["advised_s"], now, cp["between_s"]))
assert cp["interruptions"] == 4 and cp["saves"] == 4, cp
assert abs(cp["save_s"] - save) <= 0.02 * save, (save, cp)
assert abs(cp["training_s"] - training) <= 0.02 * training, (training, cp)
assert cp["advised_s"] and abs(cp["advised_s"] - advised) <= 0.02 * advised, (advised, cp)
assert cp["between_s"] and abs(cp["between_s"] - now) <= 0.02 * now, (now, cp)
PY
fi
log "PASS ($MODE): plugin: a crash loop ends at its 4th task with exit 93 (one before any check() at its 3rd), the rest of the array cancelled; findings kept when the runs died at different steps, forgiven when at one place; run: kills from outside count for nothing, saves reset the count"
