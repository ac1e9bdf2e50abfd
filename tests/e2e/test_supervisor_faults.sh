#!/usr/bin/env bash
# e2e-modes: run plugin
# e2e-variants: linuxproc cgroup
# When trainctl's own supervisor fails, as an unprivileged user's jobs see it:
#  1. kill -9 of one of two supervisors on a node (independent tasks): its rank hears of
#     it and saves and exits at once; the other ranks still get the deadline on time;
#     nothing of the user's is left after the job.
#  2. kill -9 of the only supervisor on a node, over torchrun, during a save-switch save
#     of 8 s: the ranks under the launcher see it through the supervisor's pidfd; all 4
#     exit at one step without saving again (that save is the last); nothing is left.
#  3. SIGSTOP of both supervisors of a node from when the ranks train until 12 s past
#     the deadline: a rank takes over the node state, a save-switch touch reaches both
#     ranks, the deadline comes on time, and the job completes after SIGCONT.
# Jobs 1-3 run at once. slurmctld stopped across the deadline is test_controller_stopped
# (it runs alone: it stops the controller for everyone).
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

run_as_user tcfault
# Job 3's supervisors are resumed by a background timer (below); it goes with the test.
resumer=""
trap 'rc=$?; [ -z "$resumer" ] || kill "$resumer" 2>/dev/null || true; (exit "$rc"); cleanup' EXIT
export TRAINCTL_POLL_INTERVAL=1s
# job_script NAME SRUN_ARGS TRAIN_ARGS: a batch script under the supervisor of this
# mode, its events in $TEST_DIR/NAME/.
job_script() {
  local name=$1 srun_args=$2 train=$3 wrap=""
  as_user mkdir -p "$TEST_DIR/$name/events"
  [ "$MODE" = run ] && wrap="$BUILD/bin/trainctl-run --graceful-exit=1 --kill-switch=$TEST_DIR/$name/KILL \
--save-switch=$TEST_DIR/$name/SAVE --poll-interval=1s --endtime-poll=10s --"
  cat >"$TEST_DIR/$name/job.sh" <<JOB
#!/bin/bash
srun $srun_args $wrap $train --ckpt-dir $TEST_DIR/$name/ckpt --steps 1000000 \
  --events "$TEST_DIR/$name/events/rank{rank}.jsonl"
JOB
  chmod 755 "$TEST_DIR/$name/job.sh"
}
plugin_opts() {  # NAME: the same options for the plugin
  [ "$MODE" = plugin ] && echo "--graceful-exit=1 --kill-switch=$TEST_DIR/$1/KILL --save-switch=$TEST_DIR/$1/SAVE"
  return 0
}
# events NAME EVENT: "rank step reason time" per line, for that job's events.
events() {
  python3 - "$TEST_DIR/$1/events" "$2" <<'PY'
import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/rank*.jsonl")):
    for line in open(f):
        e = json.loads(line)
        if e["event"] == sys.argv[2]:
            print(e["rank"], e["step"], e.get("reason", e.get("why", "-")), e["time"])
PY
}
count() { events "$1" "$2" | wc -l; }
at_least() { [ "$(count "$1" "$2")" -ge "$3" ]; }
# supervisor_of JOB TASK: the pid of that task's supervisor (step 0).
supervisor_of() {
  local p env
  for p in $(pgrep -u "$TEST_USER" -f 'trainctl-run' || true); do
    env=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) || continue
    grep -qx "SLURM_JOB_ID=$1" <<<"$env" && grep -qx "SLURM_STEP_ID=0" <<<"$env" &&
      grep -qx "SLURM_PROCID=$2" <<<"$env" && { echo "$p"; return 0; }
  done
  return 1
}
# start_epoch JOB: the job's StartTime in unix seconds.
start_epoch() {
  python3 -c 'import sys,time; print(int(time.mktime(time.strptime(sys.argv[1], "%Y-%m-%dT%H:%M:%S"))))' \
    "$(job_field "$1" StartTime)"
}
# seconds_after_start JOB TIME: TIME (unix) minus the job's StartTime.
seconds_after_start() { python3 -c 'import sys; print(round(float(sys.argv[1]) - int(sys.argv[2]), 1))' "$2" "$(start_epoch "$1")"; }
# deadline_exits NAME JOB LATEST RANK...: each rank exited for the deadline (at 60 s)
# between 55 s and LATEST s after the job's start; the offsets go to $offs.
offs=""
deadline_exits() {
  local name=$1 job=$2 latest=$3 r why t off
  offs=""
  shift 3
  for r in "$@"; do
    why="" t=0
    read -r _ _ why t < <(events "$name" exit | awk -v r="$r" '$1 == r') || true
    [ "$why" = deadline ] || fail "$name: rank $r exited with '${why:-nothing}', not deadline"
    off=$(seconds_after_start "$job" "$t")
    within "$off" 55 "$latest" || fail "$name: rank $r exited $off s after the start (deadline at 60 s)"
    offs+=" $off"
  done
}
within() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[2]) <= float(sys.argv[1]) <= float(sys.argv[3]) else 1)' "$@"; }

python_cmd="/usr/bin/python3 $TRAIN"
torchrun_cmd="${TORCHRUN[*]} --nnodes=\$SLURM_NNODES --nproc_per_node=2 --rdzv_backend=static \
--master_addr=127.0.0.1 --master_port=$(free_port) --node_rank=\$SLURM_NODEID $TRAIN"

log "job 1 ($MODE): 2 nodes x 2 independent tasks, deadline at 60 s; task 2's supervisor is killed"
job_script kill "--ntasks-per-node=2" "$python_cmd"
# shellcheck disable=SC2046  # plugin_opts is a word list
j1=$(submit_as_user -N2 --ntasks-per-node=2 --time=2 $(plugin_opts kill) -o "$TEST_DIR/kill/job.out" "$TEST_DIR/kill/job.sh")
# Under proctrack/cgroup slurmstepd kills what is left in the step's cgroup on a node
# once its only task (the supervisor) has ended, so job 2 tests SLURM, not trainctl;
# there, the other node's torchrun was seen not to end within 4 minutes (see the
# issue-16 note). Job 2 runs under linuxproc.
cgroup=""
[ "${TRAINCTL_E2E_VARIANT:-}" = cgroup ] && cgroup=1
if [ -z "$cgroup" ]; then
  log "job 2 ($MODE): torchrun, 1 task per node, 2 ranks each; the supervisor of task 1 is killed during a save"
  as_user mkdir -p "$TEST_DIR/launcher/events"
  wrap=""
  [ "$MODE" = run ] && wrap="$BUILD/bin/trainctl-run --kill-switch=$TEST_DIR/launcher/KILL \
--save-switch=$TEST_DIR/launcher/SAVE --poll-interval=1s --"
  cat >"$TEST_DIR/launcher/job.sh" <<JOB
#!/bin/bash
srun --ntasks-per-node=1 bash -c 'exec $wrap $torchrun_cmd --ckpt-dir $TEST_DIR/launcher/ckpt --steps 1000000 \
  --save-time 8 \
  --events "$TEST_DIR/launcher/events/rank{rank}.jsonl"'
JOB
  # shellcheck disable=SC2046
  j2=$(submit_as_user -N2 --ntasks-per-node=1 --time=5 $(plugin_opts launcher) -o "$TEST_DIR/launcher/job.out" "$TEST_DIR/launcher/job.sh")
fi
log "job 3 ($MODE): 1 node x 2 independent tasks, deadline at 60 s; both supervisors stopped across it"
job_script stop "--ntasks=2" "$python_cmd"
# Held until job 1's fault is done: on a full cluster job 1 waited 83 s for its nodes
# while job 3 ran, so job 3's deadline had passed before the test came to stop its
# supervisors (a fresh run of the test command, "no supervisor of job 790 task 0").
# shellcheck disable=SC2046
j3=$(submit_as_user --hold -N1 --ntasks=2 --time=2 $(plugin_opts stop) -o "$TEST_DIR/stop/job.out" "$TEST_DIR/stop/job.sh")

# Each fault as soon as its job trains: jobs 1 and 3 reach their deadline 60 s after
# their start (job 3 starts once released, after job 1's fault), and beside other tests
# job 2's torchrun can take about that long to start.
wait_for 120 "job 1's 4 ranks" at_least kill start 4
sup=$(supervisor_of "$j1" 2) || fail "no supervisor of job $j1 task 2"
kill -9 "$sup"
killed_at=$(date +%s.%N)
log "job 1: killed the supervisor of task 2 (pid $sup)"
scontrol release "$j3" || fail "could not release job 3 ($j3)"
wait_for 120 "job 3's 2 ranks" at_least stop start 2
# Stopped once the node's publisher has read EndTime and published the deadline: the
# ranks can start first (a rank without torch to import does within a second).
wait_for 60 "job 3's supervisor to publish the deadline" grep -qE 'task [01]\]: deadline [0-9]{4}-' "$TEST_DIR/stop/job.out"
sup_a=$(supervisor_of "$j3" 0) || fail "no supervisor of job $j3 task 0"
sup_b=$(supervisor_of "$j3" 1) || fail "no supervisor of job $j3 task 1"
# Stopped until 12 s past the deadline (the job's start + 60 s), resumed by a timer of its
# own: the checks of job 1 below can take a minute under load, and a resume that waited
# for them ran into the 2-minute limit (TIMEOUT, once in a full test run).
start3=$(start_epoch "$j3")
now=$(date +%s)
[ "$now" -lt $((start3 + 50)) ] ||
  fail "job 3: its ranks trained $((now - start3)) s after its start, too late to stop the supervisors before the deadline at 60 s"
kill -STOP "$sup_a" "$sup_b"
stopped_at=$SECONDS
(
  sleep $((start3 + 72 - now))
  kill -CONT "$sup_a" "$sup_b"
) &
resumer=$!
log "job 3: stopped both supervisors (pids $sup_a $sup_b) $((now - start3)) s after its start, until 72 s"
sleep 3
as_user touch "$TEST_DIR/stop/SAVE"
log "job 3: touched the save switch"


rank2_exited() { [ -n "$(events kill exit | awk '$1 == 2')" ]; }
wait_for 30 "job 1's rank 2 to exit" rank2_exited
read -r _ _ why2 t2 < <(events kill exit | awk '$1 == 2') || true
[ "$why2" = signal ] || fail "job 1: rank 2 exited with reason '$why2', not signal"
late=$(python3 -c 'import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))' "$t2" "$killed_at")
# From -1 s: killed_at is read after kill(1) returns, and the rank can hear of the death
# (its supervisor's pidfd) before that, on a loaded machine.
within "$late" -1 10 || fail "job 1: rank 2 exited $late s after its supervisor died"
[ -n "$(events kill save | awk '$1 == 2')" ] || fail "job 1: rank 2 did not save before exiting"
log "job 1: rank 2 saved and exited $late s after its supervisor was killed"
wait_for 100 "job 1 to end" job_ended "$j1"
deadline_exits kill "$j1" 75 0 1 3
log "job 1: ranks 0, 1, 3 exited at the deadline, at$offs s (deadline at 60 s); job $(job_state "$j1")"

wait_for 90 "job 3's ranks to exit" at_least stop exit 2
[ "$(count stop save)" -ge 3 ] || fail "job 3: the save switch reached $(events stop save | grep -c save-switch) of 2 ranks: $(events stop save)"
[ "$(events stop save | grep -c save-switch)" = 2 ] || fail "job 3: save-switch saves: $(events stop save)"
deadline_exits stop "$j3" 70 0 1
log "job 3: both ranks exited at$offs s (deadline at 60 s) with their supervisors stopped; saves: $(events stop save | awk '{print "rank " $1 " " $3}' | tr '\n' ',')"
grep -q "publishes it from now on" "$TEST_DIR/stop/job.out" || fail "job 3: no line saying a rank took over the node state"
wait "$resumer" || fail "job 3: the timer could not resume the supervisors"
resumer=""
log "job 3: supervisors resumed after $((SECONDS - stopped_at)) s"
wait_for 60 "job 3 to end" job_ended "$j3"
[ "$(job_state "$j3")" = COMPLETED ] || fail "job 3 ended $(job_state "$j3")"
log "job 3: one save per rank and the deadline on time while both supervisors were stopped; COMPLETED"

# Job 2 last: its torchrun may take a minute to start beside other tests.
if [ -z "$cgroup" ]; then
  wait_for 180 "job 2's 4 ranks" at_least launcher start 4
  as_user touch "$TEST_DIR/launcher/SAVE"
  # Rank 0's marker while the save of 8 s goes on (every rank saves at the same step).
  wait_for 30 "job 2's save to begin" test -e "$TEST_DIR/launcher/ckpt/SAVING"
  sup2=$(supervisor_of "$j2" 1) || fail "no supervisor of job $j2 task 1"
  kill -9 "$sup2"
  [ -e "$TEST_DIR/launcher/ckpt/SAVING" ] || fail "job 2: the save ended before the supervisor was killed"
  log "job 2: killed the supervisor of task 1 (pid $sup2) during the save-switch save"
  launcher_gone() { [ -z "$(pgrep -u "$TEST_USER" -f "$TEST_DIR/launcher" || true)" ]; }
  wait_for 60 "job 2 to end" job_ended "$j2"
  read -r -a e2 <<<"$(events launcher exit | awk '{print $2, $3}' | sort -u | tr '\n' ' ')"
  [ "$(count launcher exit)" = 4 ] || fail "job 2: $(count launcher exit) of 4 ranks exited: $(events launcher exit)"
  { [ "${#e2[@]}" = 2 ] && [ "${e2[1]}" = signal ]; } || fail "job 2: expected one step, reason signal: $(events launcher exit)"
  saves=$(events launcher save | awk '{print $3}' | sort | uniq -c | tr -s ' ' | tr '\n' ',')
  [ "$saves" = " 4 save-switch," ] || fail "job 2: saves (count, why): $saves not 4 of the save switch alone"
  # The template's exit event says whether the decision said the state was saved.
  unsaved=$(python3 -c 'import glob, json, sys
print(sum(1 for f in glob.glob(sys.argv[1] + "/rank*.jsonl") for e in map(json.loads, open(f))
          if e["event"] == "exit" and e.get("saved") is not True))' "$TEST_DIR/launcher/events")
  [ "$unsaved" = 0 ] || fail "job 2: $unsaved exits were not told the save was made: $(events launcher exit)"
  grep -q "the supervisor of this task is gone" "$TEST_DIR/launcher/job.out" || fail "job 2: no line about the supervisor's death"
  grep -q "without a save: a supervisor went away during the save" "$TEST_DIR/launcher/job.out" ||
    fail "job 2: no line saying why the exit made no save"
  wait_for 20 "job 2's processes to go" launcher_gone
  log "job 2: all 4 ranks exited at step ${e2[0]} (signal) without saving again after their supervisor died during the save; nothing left"
fi

end=$((SECONDS + 30))
until no_user_processes; do
  [ "$SECONDS" -lt "$end" ] || fail "processes of $TEST_USER left 30 s after jobs 1-3: $(ps -o pid,ppid,stat,args -u "$TEST_USER")"
  sleep 0.5
done
log "nothing of $TEST_USER's is left after jobs 1-3"
what="supervisor killed (rank saved at once, others on time)"
[ -n "$cgroup" ] || what+=", launcher's supervisor killed during a save (4 ranks at one step, one save)"
log "PASS ($MODE${cgroup:+, cgroup}): $what, supervisors stopped (save and deadline on time); nothing left"
