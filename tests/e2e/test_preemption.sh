#!/usr/bin/env bash
# e2e-modes: run plugin
# e2e-variants: linuxproc cgroup
# e2e-core: plugin run plugin_cgroup
# e2e-alone: its high-priority job on every node preempts every other test's job
# Preemption with GraceTime: a low-priority requeueable job is preempted by a
# high-priority one; its ranks save within the grace (reason preempted); the job is
# requeued, restarts, and resumes at the saved step + 1. trainctl report shows both runs,
# the preempted one's kept training as its rank 0 logged it, nothing lost.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

STEPS=300 supervised_job "$TEST_DIR/job.sh" --kill-switch="$TEST_DIR/KILL"
job=$(submit -p low -N2 --ntasks-per-node=1 --time=10 --requeue "${JOB_OPTS[@]}" -o "$TEST_DIR/job.out" --open-mode=append "$TEST_DIR/job.sh")
log "submitted low-priority job $job ($MODE)"
wait_for 120 "4 ranks started" events_at_least start 4
sleep 3
high=$(submit -p high -N3 --exclusive --time=2 -o /dev/null --wrap "sleep 5")
log "submitted high-priority job $high on all 3 nodes"
wait_for 60 "4 ranks to exit" events_at_least exit 4
read -r n steps reasons < <(exit_summary)
{ [ "$n" = 4 ] && [ "$steps" = 1 ]; } || fail "expected 4 ranks to exit at one step; got $n at $steps steps"
[ "$reasons" = preempted ] || fail "expected reason preempted, got '$reasons'"
saved=$(python3 -c 'import glob,json,sys; print(max(json.loads(l)["step"] for f in glob.glob(sys.argv[1]+"/events/*") for l in open(f) if "\"exit\"" in l))' "$TEST_DIR")
log "all 4 ranks saved at step $saved and exited (preempted); waiting for the requeued run"
# SLURM holds a requeued job for a while (Reason=BeginTime); the test does not wait
# for that hold: it lets the job start as soon as the nodes are free.
job_pending() { [ "$(job_state "$job")" = PENDING ]; }
wait_for 60 "the job to be requeued" job_pending
scontrol update JobId="$job" StartTime=now || fail "cannot release the requeued job's hold"
wait_for 120 "the requeued job to start again" events_at_least start 8
log "the requeued job started again"
resumed=$(python3 -c 'import glob,json,sys; s=[json.loads(l) for f in glob.glob(sys.argv[1]+"/events/*") for l in open(f) if "\"start\"" in l]; print(" ".join(sorted({str(e["step"]) for e in s if e["resumed_from"] is not None})))' "$TEST_DIR")
[ "$resumed" = "$((saved + 1))" ] || fail "the requeued run started at step(s) $resumed, not $((saved + 1))"
wait_for 120 "the job to finish" job_ended "$job"
[ "$(job_state "$job")" = COMPLETED ] || fail "job ended $(job_state "$job")"
# Where the cluster keeps accounting, trainctl report shows both runs: the preempted one
# with its save, notice and exit, then the one that completed.
if grep -q '^AccountingStorageType=accounting_storage/slurmdbd' "$SLURM_CONF"; then
  runs_done() { [ "$(sacct -X -D -n -P -j "$job" -o State | grep -cE 'REQUEUED|PREEMPTED|COMPLETED')" -eq 2 ]; }
  wait_for 60 "sacct to have both runs" runs_done
  report=$("$BUILD/bin/trainctl" report --no-svg "$job") || fail "trainctl report failed"
  printf '%s\n' "$report"
  printf '%s\n' "$report" | grep -qE "^$job +(REQUEUED|PREEMPTED) .* preempted at step $saved\$" ||
    fail "the report does not show the preempted run's exit at step $saved"
  printf '%s\n' "$report" | grep -qE "^$job +COMPLETED " || fail "the report does not show the completed run"
  # (Under load the detail line may go on with the run's slow steps.)
  printf '%s\n' "$report" | grep -qE "^  $job: save at step $saved \(preempted, [0-9.]+s\); notice preempted at \+[0-9.]+s(;|$)" ||
    fail "the report does not show the preemption's save and notice"
  # Its figures against rank 0's own log: the preempted run kept its training up to its
  # save, lost nothing, and is no interruption a shorter checkpoint interval would help.
  "$BUILD/bin/trainctl" report --json --no-svg "$job" >"$TEST_DIR/report.json" || fail "trainctl report --json failed"
  python3 - "$TEST_DIR/report.json" "$TEST_DIR/events/rank0.jsonl" <<'PY' || fail "the preempted run's figures are not what its log says"
import json, sys
report = json.load(open(sys.argv[1]))
events = [json.loads(l) for l in open(sys.argv[2])]
start = next(e for e in events if e["event"] == "start")
save = next(e for e in events if e["event"] == "save" and e["why"] == "preempted")
kept = save["time"] - save["took"] - (start["time"] + 0.05)
first, second = report["tasks"]
print("preempted run: kept %.1f s (program's log) vs %.1f s (report); lost %.1f s; notices %s; interruptions %d" % (
    kept, first["training_kept_s"], first["lost_s"], first["notices"], report["checkpoints"]["interruptions"]))
assert first["exit_reason"] == "preempted" and [n["kind"] for n in first["notices"]] == ["preempted"], first
assert abs(kept - first["training_kept_s"]) <= 3 and first["lost_s"] <= 1 and first["hung_s"] == 0, first
assert second["exit_reason"] is None and second["lost_s"] <= 1, second
assert report["checkpoints"]["interruptions"] == 0, report["checkpoints"]
PY
fi
# A preemption that moves EndTime inside the graceful exit is the preemption's doing,
# not a stopped supervisor's (issue 34, item 7).
! grep -q "stopped or busy" "$TEST_DIR/job.out" || fail "the preemption's deadline was blamed on a stopped supervisor: $(grep "stopped or busy" "$TEST_DIR/job.out")"
log "PASS: preempted at step $saved (reason preempted), requeued, resumed at step $resumed, COMPLETED"
