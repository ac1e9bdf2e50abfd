#!/usr/bin/env bash
# e2e-modes: run plugin
# The node state and the exit, as an unprivileged user's jobs see them:
#  1. the node state truncated on one node and junk-filled past its header on the other
#     mid-run, in ranks that called faulthandler.enable() after making their Controller
#     (a handler in front of trainctl's SIGBUS guard): no SIGBUS, no exit for reasons
#     nobody gave, one line naming the file, and the kill switch still works; no node is
#     recorded as bad.
#  2. 10 touches of the save switch 0.3 s apart on 4 independent ranks (no agreement):
#     exactly 10 saves on every rank (touches under 0.25 s apart would be one).
#  3. a rank that ignores the exit: named when SLURM's TERM comes, and the job's end is
#     not logged as an EndTime extension.
#  4. (plugin) a job that uses none of the plugin's options, 2 independent ranks per node
#     (no launcher), each node's ranks their own node state's publishers, in the user's
#     /dev/shm/trainctl-<uid>: both ranks on one node abort, so no process of that node
#     is left to remove what they used (srun ends the others); once the job has ended
#     (the plugin's job epilog), no file of it is left there.
#  5. (plugin) versions that do not mix: the rank's library is an older release's (another
#     node-state layout, built as tests/other-layout/ for this) under this build's plugin
#     and supervisor: the job runs, the rank says so in one line naming both versions and
#     what to install, and the kill switch still ends it.
# The jobs run at once.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

run_as_user tcstate
export TRAINCTL_POLL_INTERVAL=1s

# job NAME SBATCH_ARGS SRUN_ARGS [TRAIN_ARGS]: independent tasks of the example under
# this mode's supervisor, events in $TEST_DIR/NAME/; prints the job id.
job() {
  local name=$1 sbatch_args=$2 srun_args=$3 extra=${4:-} wrap="" opts=""
  as_user mkdir -p "$TEST_DIR/$name/events"
  if [ "$MODE" = run ]; then
    wrap="$BUILD/bin/trainctl-run --kill-switch=$TEST_DIR/$name/KILL --save-switch=$TEST_DIR/$name/SAVE \
--poll-interval=1s --"
  else
    opts="--kill-switch=$TEST_DIR/$name/KILL --save-switch=$TEST_DIR/$name/SAVE"
  fi
  cat >"$TEST_DIR/$name/job.sh" <<JOB
#!/bin/bash
srun $srun_args $wrap /usr/bin/python3 $TRAIN --ckpt-dir $TEST_DIR/$name/ckpt --steps 1000000 $extra \
  --events "$TEST_DIR/$name/events/rank{rank}.jsonl"
JOB
  chmod 755 "$TEST_DIR/$name/job.sh"
  # shellcheck disable=SC2086  # word lists
  submit_as_user $sbatch_args $opts -o "$TEST_DIR/$name/job.out" "$TEST_DIR/$name/job.sh"
}
count() { cat "$TEST_DIR/$1"/events/rank*.jsonl 2>/dev/null | grep -c "\"event\": \"$2\"" || true; }
at_least() { [ "$(count "$1" "$2")" -ge "$3" ]; }
saves_per_rank() {
  python3 - "$TEST_DIR/$1/events" <<'PY'
import collections, glob, json, sys
n = collections.Counter()
for f in glob.glob(sys.argv[1] + "/rank*.jsonl"):
    for line in open(f):
        e = json.loads(line)
        if e["event"] == "save" and e["why"] == "save-switch":
            n[e["rank"]] += 1
print(" ".join(str(n[r]) for r in sorted(n)) or "none")
PY
}

j1=$(job damage "-N2 --ntasks-per-node=1 --time=5" "--ntasks-per-node=1" "--faulthandler")
j2=$(job touches "-N2 --ntasks-per-node=2 --time=5" "--ntasks-per-node=2")
j3=$(job ignore "-N1 --ntasks=2 --time=5" "--ntasks=2" "--ignore-exit-rank 1")
log "jobs $j1 (damage), $j2 (touches), $j3 (ignore) submitted ($MODE) as $TEST_USER"
if [ "$MODE" = plugin ]; then
  older=$BUILD/tests/other-layout/libtrainctl.so.0
  [ -f "$older" ] || fail "no library of another layout at $older (target trainctl_other_layout)"
  j5=$(job mixed "-N1 --ntasks=1 --time=5 --export=ALL,TRAINCTL_LIBRARY=$older" "--ntasks=1")
  log "job $j5 (mixed): its rank's library is $older"
fi
wait_for 120 "job $j1's 2 ranks" at_least damage start 2
wait_for 120 "job $j2's 4 ranks" at_least touches start 4
wait_for 120 "job $j3's 2 ranks" at_least ignore start 2
sleep 2

# Beside other tests the job may get any two of n1-n3.
na=$(job_node "$j1" 1) nb=$(job_node "$j1" 2)
log "job $j1: truncating the node state on $na and filling it with junk on $nb"
dir=/dev/shm/trainctl-$TEST_UID
# Where the plugin made it as root; and without the plugin too, once it exists.
[ -d "/run/trainctl/$TEST_UID" ] && dir=/run/trainctl/$TEST_UID
{ [ -f "$dir/$j1.0-$na" ] && [ -f "$dir/$j1.0-$nb" ]; } || fail "no node state files for job $j1 in $dir: $(ls "$dir")"
as_user truncate -s 0 "$dir/$j1.0-$na"
# Past an intact header (its first 120 bytes: magic, version, size, flags, the times):
# only a check of every slot tells this from a state trainctl wrote.
size=$(stat -c %s "$dir/$j1.0-$nb")
as_user dd if=/dev/urandom of="$dir/$j1.0-$nb" bs=8 seek=15 count=$(((size - 120) / 8)) conv=notrunc status=none

log "job $j2: 10 touches of the save switch, 0.3 s apart"
for _ in $(seq 1 10); do
  as_user touch "$TEST_DIR/touches/SAVE"
  sleep 0.3
done

log "job $j3: the kill switch; rank 1 ignores it"
as_user touch "$TEST_DIR/ignore/KILL"

sleep 6
[ "$(count damage exit)" = 0 ] || fail "job $j1: ranks exited after the damage: $(cat "$TEST_DIR"/damage/events/*)"
[ "$(job_state "$j1")" = RUNNING ] || fail "job $j1 is $(job_state "$j1") after the damage"
grep -q "node state $dir/$j1.0-$na was truncated" "$TEST_DIR/damage/job.out" ||
  fail "job $j1: no line naming the truncated file: $(grep -i 'node state' "$TEST_DIR/damage/job.out" | head -3)"
grep -q "node state $dir/$j1.0-$nb .*overwritten" "$TEST_DIR/damage/job.out" ||
  fail "job $j1: no line naming the overwritten file: $(grep -i 'node state' "$TEST_DIR/damage/job.out" | head -3)"
as_user touch "$TEST_DIR/damage/KILL"
wait_for 30 "job $j1 to end" job_ended "$j1"
[ "$(job_state "$j1")" = COMPLETED ] || fail "job $j1 ended $(job_state "$j1")"
[ "$(cat "$TEST_DIR"/damage/events/* | grep '"exit"' | grep -c '"kill-switch"')" = 2 ] ||
  fail "job $j1: expected 2 exits for the kill switch: $(grep -h exit "$TEST_DIR"/damage/events/*)"
bus=$(grep "SIGBUS\|Bus error" "$TEST_DIR/damage/job.out" | grep -v "a SIGBUS handler was installed") || true
[ -z "$bus" ] || fail "job $j1: a SIGBUS: $bus"
grep -q "a SIGBUS handler was installed after trainctl's guard" "$TEST_DIR/damage/job.out" ||
  fail "job $j1: no line saying the guard was put first again (did --faulthandler reach the ranks?)"
[ ! -s "$TRAINCTL_BAD_NODES" ] || fail "a node was recorded as bad: $(cat "$TRAINCTL_BAD_NODES")"
log "job $j1: no SIGBUS, no exit, one line per damaged file; the kill switch ended it; no bad node"

for _ in $(seq 1 30); do [ "$(saves_per_rank touches)" = "10 10 10 10" ] && break; sleep 1; done
as_user touch "$TEST_DIR/touches/KILL"
wait_for 30 "job $j2 to end" job_ended "$j2"
[ "$(saves_per_rank touches)" = "10 10 10 10" ] || fail "job $j2: saves per rank $(saves_per_rank touches)"
log "job $j2: 10 touches gave 10 saves on every rank: $(saves_per_rank touches)"

wait_for 30 "job $j3's rank 0 to exit" at_least ignore exit 1
[ "$(count ignore ignore-exit)" = 1 ] || fail "job $j3: rank 1 did not get (and ignore) the exit"
sleep 3
scancel "$j3"
wait_for 60 "job $j3 to end" job_ended "$j3"
grep -q "1 rank process still running [0-9]* s after it was told to exit (kill switch), when SIGTERM came: rank 1 (pid [0-9]*)" \
  "$TEST_DIR/ignore/job.out" || fail "job $j3: the lingering rank was not named: $(grep -i 'still\|rank' "$TEST_DIR/ignore/job.out" | head -5)"
if grep -q "EndTime moved" "$TEST_DIR/ignore/job.out"; then fail "job $j3: the kill was logged as an EndTime move"; fi
if [ "$MODE" = plugin ]; then
  wait_for 60 "job $j5's rank" at_least mixed start 1
  said=$(grep -c "cannot share the node state" "$TEST_DIR/mixed/job.out") || true
  [ "$said" = 1 ] || fail "job $j5: $said lines about the versions, not 1: $(cat "$TEST_DIR/mixed/job.out")"
  grep -qE "^trainctl: this node's SPANK plugin \(with its trainctl-run\) is trainctl [0-9.]+ \(node-state layout [0-9]+\) and this rank's library trainctl 0\.0\.9 \(node-state layout 11\): they cannot share the node state; install one version for both \(the newer is [0-9.]+; docs/admins.md, Versions and upgrading\)\. This process watches on its own" \
    "$TEST_DIR/mixed/job.out" || fail "job $j5: the line does not name both versions: $(grep layout "$TEST_DIR/mixed/job.out")"
  [ "$(job_state "$j5")" = RUNNING ] || fail "job $j5 is $(job_state "$j5") with a library of another layout"
  as_user touch "$TEST_DIR/mixed/KILL"
  wait_for 60 "job $j5 to end" job_ended "$j5"
  [ "$(job_state "$j5")" = COMPLETED ] || fail "job $j5 ended $(job_state "$j5")"
  grep -q '"exit".*"kill-switch"' "$TEST_DIR"/mixed/events/* ||
    fail "job $j5: the kill switch did not reach the rank: $(cat "$TEST_DIR"/mixed/events/*)"
  log "job $j5: a library of another layout ran under this plugin, said so in one line, and ended on the kill switch"

  # Job 4: no option, so no supervisor; every rank on the job's second node aborts.
  mkdir -p "$TEST_DIR/bare" && chown "$TEST_USER" "$TEST_DIR/bare"
  cat >"$TEST_DIR/bare/job.sh" <<JOB
#!/bin/bash
second=\$(scontrol show hostnames "\$SLURM_JOB_NODELIST" | tail -n 1)
srun --kill-on-bad-exit=1 --ntasks-per-node=2 /usr/bin/python3 $TRAIN --ckpt-dir $TEST_DIR/bare/ckpt --steps 1000000 --crash-on "\$second" --crash-after 20
JOB
  chmod 755 "$TEST_DIR/bare/job.sh"
  j4=$(submit_as_user -N2 --ntasks-per-node=2 --time=5 -o "$TEST_DIR/bare/job.out" "$TEST_DIR/bare/job.sh")
  wait_for 120 "job $j4 (no plugin option, a node's ranks abort) to end" job_ended "$j4"
  grep -q "Aborted\|signal 6\|SIGABRT\|core dumped\|exit code 134" "$TEST_DIR/bare/job.out" ||
    fail "job $j4: no rank aborted: $(tail -n 5 "$TEST_DIR/bare/job.out")"
  left=$(find "/dev/shm/trainctl-$TEST_UID" -maxdepth 1 -name "$j4.*" 2>/dev/null)
  [ -z "$left" ] || fail "job $j4 left its node state in /dev/shm/trainctl-$TEST_UID: $left"
  log "job $j4: no plugin option, every rank of a node aborted; nothing of it left in /dev/shm/trainctl-$TEST_UID"
fi
log "PASS ($MODE): damaged state survived and named, 10 saves per rank for 10 touches, the lingering rank named at TERM"
