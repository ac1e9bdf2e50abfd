#!/usr/bin/env bash
# e2e-variants: linuxproc cgroup
# e2e-core: all
# e2e-alone: its high-priority job on every node preempts every other test's job
# Preemption with GraceTime, for trainctl-run and the plugin at once: two low-priority
# requeueable jobs (one with trainctl-run in each task on the slurm.conf without the
# plugin, one under the plugin) are preempted by one high-priority job; each job's
# ranks save within the grace (reason preempted) and commit the save (each node's
# supervisor says so); each job is requeued, restarts, and resumes at its saved step + 1
# (trainctl.resume_path). trainctl report shows both runs of each, the
# preempted one's kept training as its rank 0 logged it, nothing lost. Both modes in
# one test: it runs alone, and the two would wait for the same preemption twice.
# Each job is requeued once: by the controller where the release requeues a preempted
# job itself (24.05 on), else by trainctl-run --batch or the plugin, and the job's log
# says which. In a newer release's root (scripts/test's lanes) the trainctl-run job
# runs the wheel's trainctl-run, built against Debian 11's SLURM 20.11: the tool a
# user without root has, which must ask the node's SLURM, not its own headers.
# The run id: the same for every rank of both runs, with the job's first SubmitTime
# (SLURM sets it anew at the requeue); an earlier array's lines under the same job id
# (as after a controller's ids start again) change neither the id nor the report
# (where the cluster keeps accounting the report windows events by sacct's runs; in
# the releases' roots, without it, those lines would be rebuilt as a third run).
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

release=${TRAINCTL_TESTBED_RELEASE:-}
run_tool="the build's trainctl-run"
if [ -n "$release" ] && [ -n "${TRAINCTL_WHEEL_PREBUILT:-}" ]; then
  the_wheel
  python3 -m zipfile -e "$WHEEL" "$TEST_DIR/wheel"
  TRAINCTL_RUN=$(echo "$TEST_DIR"/wheel/trainctl-*.data/scripts/trainctl-run)
  chmod 755 "$TRAINCTL_RUN"  # as pip installs it (zipfile keeps no modes)
  run_tool="the wheel's trainctl-run ($(basename "$WHEEL"))"
fi

# ev_count DIR EVENT: how many lines of EVENT the ranks wrote in DIR.
ev_count() { cat "$1"/rank*.jsonl 2>/dev/null | grep -c "\"event\": \"$2\"" || true; }
ev_at_least() { [ "$(ev_count "$1" "$2")" -ge "$3" ]; }
both_at_least() { ev_at_least "$TEST_DIR/events-run" "$1" "$2" && ev_at_least "$TEST_DIR/events-plugin" "$1" "$2"; }
# old_array JOB: the lines an earlier array with JOB's id left two days ago (its run
# began, a deadline notice, an exit, its end), as the user's run events keep them.
old_array() {
  local dir=${TRAINCTL_RUN_EVENTS_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/trainctl/runs}
  local t=$((($(date +%s) - 2 * 86400) * 1000))
  (umask 077 && mkdir -p "$dir" && printf '%s\n' "$t job=$1 task_start restart=0 since=$((t - 5000))" \
    "$((t + 1000)) job=$1 first_step step=0" "$((t + 2000)) job=$1 notice reason=deadline" \
    "$((t + 3000)) job=$1 exit step=7 reason=deadline" "$((t + 4000)) job=$1 task_end reason=ok restart=0" \
    >>"$dir/$1") || fail "cannot write the earlier array's run events of job $1"
}
# utc_stamp SLURM_TIME: as the run id shows it (scontrol prints local time).
utc_stamp() { date -u -d "@$(date -d "$1" +%s)" +%Y%m%dT%H%M%S; }
declare -A job submitted
for MODE in run plugin; do
  EVENTS_DIR=$TEST_DIR/events-$MODE CKPT_DIR=$TEST_DIR/ckpt-$MODE STEPS=300 \
    supervised_job "$TEST_DIR/job-$MODE.sh" --kill-switch="$TEST_DIR/KILL-$MODE"
  conf=$SLURM_CONF
  [ "$MODE" = plugin ] || conf=$CLUSTER_ETC/without-plugin/slurm.conf
  job[$MODE]=$(SLURM_CONF=$conf submit -p low -N2 --ntasks-per-node=1 --time=10 --requeue --hold "${JOB_OPTS[@]}" \
    -o "$TEST_DIR/job-$MODE.out" --open-mode=append "$TEST_DIR/job-$MODE.sh")
  old_array "${job[$MODE]}"
  submitted[$MODE]=$(job_field "${job[$MODE]}" SubmitTime)
  scontrol release "${job[$MODE]}" || fail "cannot release job ${job[$MODE]}"
done
log "submitted low-priority jobs ${job[run]} ($run_tool) and ${job[plugin]} (plugin), each over an earlier array's lines"
wait_for 120 "4 ranks of each job started" both_at_least start 4
for MODE in run plugin; do wait_for 60 "job ${job[$MODE]}'s ranks past step 20" ranks_past "${job[$MODE]}" 4 20; done
high=$(submit -p high -N3 --exclusive --time=2 -o /dev/null --wrap "sleep 5")
log "submitted high-priority job $high on all 3 nodes"
wait_for 60 "4 ranks of each job to exit" both_at_least exit 4
declare -A saved
for MODE in run plugin; do
  read -r n steps reasons saved[$MODE] < <(python3 - "$TEST_DIR/events-$MODE" <<'PY'
import glob, json, sys
ex = [json.loads(l) for f in glob.glob(sys.argv[1] + "/rank*.jsonl") for l in open(f) if '"exit"' in l]
print(len(ex), len({e["step"] for e in ex}), ",".join(sorted({e["reason"] for e in ex})), max(e["step"] for e in ex))
PY
  )
  { [ "$n" = 4 ] && [ "$steps" = 1 ]; } || fail "$MODE: expected 4 ranks to exit at one step; got $n at $steps steps"
  [ "$reasons" = preempted ] || fail "$MODE: expected reason preempted, got '$reasons'"
  log "$MODE: all 4 ranks of job ${job[$MODE]} saved at step ${saved[$MODE]} and exited (preempted)"
done
# SLURM holds a requeued job for a while (Reason=BeginTime); the test does not wait
# for that hold: it lets the jobs start as soon as the nodes are free.
for MODE in run plugin; do
  job_pending() { [ "$(job_state "${job[$MODE]}")" = PENDING ]; }
  wait_for 60 "job ${job[$MODE]} to be requeued" job_pending
  scontrol update JobId="${job[$MODE]}" StartTime=now || fail "cannot release the requeued job ${job[$MODE]}'s hold"
done
wait_for 120 "both requeued jobs to start again" both_at_least start 8
log "the requeued jobs started again"
cluster=$(scontrol show config | awk '$1 == "ClusterName" {print $3}')
for MODE in run plugin; do
  j=${job[$MODE]}
  resumed=$(python3 -c 'import glob,json,sys; s=[json.loads(l) for f in glob.glob(sys.argv[1]+"/rank*.jsonl") for l in open(f) if "\"start\"" in l]; print(" ".join(sorted({str(e["step"]) for e in s if e["resumed_from"] is not None})))' "$TEST_DIR/events-$MODE")
  [ "$resumed" = "$((saved[$MODE] + 1))" ] || fail "$MODE: the requeued run started at step(s) $resumed, not $((saved[$MODE] + 1))"
  # The logger's run id: one for every rank of both runs, the job's on its cluster with
  # its first SubmitTime, not the requeue's.
  ids=$(python3 -c 'import glob,json,sys; print(" ".join(sorted({str(json.loads(l).get("run_id")) for f in glob.glob(sys.argv[1]+"/rank*.jsonl") for l in open(f) if "\"start\"" in l})))' "$TEST_DIR/events-$MODE")
  want=$cluster-$j-$(utc_stamp "${submitted[$MODE]}")
  [ "$ids" = "$want" ] ||
    fail "$MODE: the ranks' run ids across the requeue: '$ids', not '$want' (SubmitTime now $(job_field "$j" SubmitTime))"
  wait_for 120 "job $j to finish" job_ended "$j"
  [ "$(job_state "$j")" = COMPLETED ] || fail "$MODE: job $j ended $(job_state "$j")"
  # A preemption that moves EndTime inside the graceful exit is the preemption's doing,
  # not a stopped supervisor's (issue 34, item 7).
  ! grep -q "stopped or busy" "$TEST_DIR/job-$MODE.out" ||
    fail "$MODE: the preemption's deadline was blamed on a stopped supervisor: $(grep "stopped or busy" "$TEST_DIR/job-$MODE.out")"
  # The preemption's save, committed on every rank (ctl.saved): each node's supervisor says so.
  [ "$(grep -c "the save at step ${saved[$MODE]} is committed by every rank on " "$TEST_DIR/job-$MODE.out")" = 2 ] ||
    fail "$MODE: not both nodes said the save at step ${saved[$MODE]} is committed: $(grep 'the save at' "$TEST_DIR/job-$MODE.out")"
  # Requeued once, by the one the node's SLURM release leaves it to.
  [ "$(job_field "$j" Restarts)" = 1 ] || fail "$MODE: job $j was started $(job_field "$j" Restarts) more times, not once"
  if [ "$MODE" = run ]; then
    slurm=$(sinfo -V | grep -o '[0-9][0-9]*\.[0-9][0-9]*' | head -n 1)
    case $slurm in 2[0-3].* | 24.0[0-4]) said="the job was preempted: requeued it to resume" ;;
      *) said="the job was preempted: SLURM [0-9.]* requeues it to resume" ;; esac
    grep -q "trainctl-run.*: $said" "$TEST_DIR/job-$MODE.out" ||
      fail "run: on SLURM $slurm, $run_tool did not say '$said': $(grep -h 'preempted' "$TEST_DIR/job-$MODE.out" | head -n 5)"
  fi
  log "$MODE: preempted at step ${saved[$MODE]}, requeued once, resumed at step $resumed (run id $ids in both runs), COMPLETED"
done
# trainctl report shows both runs of each job: the preempted one with its save, notice
# and exit, then the one that completed. Where the cluster keeps accounting, sacct -D
# has both runs; where it does not (the releases' clusters), the preempted run is
# rebuilt from trainctl's events.
accounting=0
grep -q '^AccountingStorageType=accounting_storage/slurmdbd' "$SLURM_CONF" && accounting=1
for MODE in run plugin; do
  j=${job[$MODE]}
  s=${saved[$MODE]}
  runs_done() { [ "$(sacct -X -D -n -P -j "$j" -o State | grep -cE 'REQUEUED|PREEMPTED|COMPLETED')" -eq 2 ]; }
  [ "$accounting" = 0 ] || wait_for 60 "sacct to have both runs of job $j" runs_done
  report=$("$BUILD/bin/trainctl" report --no-svg "$j") || fail "trainctl report $j failed"
  printf '%s\n' "$report"
  grep -qE "^$j +(REQUEUED|PREEMPTED) .* preempted at step $s\$" <<<"$report" ||
    fail "$MODE: the report does not show the preempted run's exit at step $s"
  grep -qE "^$j +COMPLETED " <<<"$report" || fail "$MODE: the report does not show the completed run"
  rebuilt=""
  [ "$accounting" = 1 ] || rebuilt=" an earlier run, from trainctl's events \([^)]*\);"
  # (Under load the detail line may go on with the run's slow steps.)
  grep -qE "^  $j:$rebuilt save at step $s \(preempted, [0-9.]+s\); notice preempted at \+[0-9.]+s(;|\$)" <<<"$report" ||
    fail "$MODE: the report does not show the preemption's save and notice"
  # Its figures against rank 0's own log: the preempted run kept its training up to
  # its save, lost nothing, and is no interruption a shorter checkpoint interval would help.
  "$BUILD/bin/trainctl" report --json --no-svg "$j" >"$TEST_DIR/report-$MODE.json" || fail "trainctl report --json $j failed"
  python3 - "$TEST_DIR/report-$MODE.json" "$TEST_DIR/events-$MODE/rank0.jsonl" <<'PY' || fail "$MODE: the preempted run's figures are not what its log says"
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
done
log "PASS: both jobs ($run_tool, plugin) preempted, saved, requeued once, resumed at the saved step + 1, COMPLETED"
