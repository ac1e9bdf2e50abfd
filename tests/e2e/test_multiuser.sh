#!/usr/bin/env bash
# e2e-modes: run plugin
# e2e-core: plugin
# e2e-locks: team-users
# Real users, never root: alice runs the job, bob (her teammate, group tcteam) touches
# her switches in a group-shared setgid directory, mallory (another user of the same
# nodes) attacks. Before alice's first job mallory squats every node-state name she can
# guess for alice's next job ids: the state directory itself, the old /dev/shm names,
# lock files, symlinks. Job 1 must still get its deadline, bob's save and a COMPLETED
# end, and say in one line which path mallory owns. Then, with alice's own private
# directory in place, mallory can plant nothing in it, cannot touch alice's switches,
# and bob's kill switch ends job 2 at once. bob's links in the team's checkpoint directory
# (SAVING to a file of alice's, a checkpoint of his to resume from) touch nothing of hers
# and are never resumed from.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

make_team_users
as() {  # as USER COMMAND...: as that user, with the cluster's environment, umask 007
  local who=$1
  shift
  runuser -u "$who" -- env SLURM_CONF="$SLURM_CONF" PYTHONPATH="$PYTHONPATH" PATH="$PATH" \
    bash -c 'umask 007; exec "$@"' bash "$@"
}
alice_uid=$(id -u alice)
their_processes() { pgrep -u alice,bob,mallory 2>/dev/null | tr '\n' ' ' || true; }
on_exit() {
  local rc=$? p
  for p in $(their_processes); do kill -9 "$p" 2>/dev/null || true; done
  set +e  # errexit would end this handler at the next line, before cleanup
  (exit "$rc")
  cleanup
}
trap on_exit EXIT

# alice's project: group tcteam, setgid, so bob's files are the team's; the switches
# live in it (where the README says switches belong).
chown alice:tcteam "$TEST_DIR"
chmod 2770 "$TEST_DIR"
as alice mkdir -p "$TEST_DIR/switches" "$TEST_DIR/events"
sw=$TEST_DIR/switches
export TRAINCTL_POLL_INTERVAL=1s

# Start from a node where alice never ran trainctl (or mallory got there first).
rm -rf "/dev/shm/trainctl-$alice_uid" "/dev/shm/trainctl-$alice_uid"-* "/dev/shm/trainctl-$alice_uid".*
# Without the plugin no node has /run/trainctl/<uid> (an earlier plugin test made it).
[ "$MODE" = run ] && rm -rf "/run/trainctl/$alice_uid"

log "mallory squats every name she can guess for alice's next job ids"
probe=$(as mallory sbatch --parsable --hold --wrap true) || fail "mallory cannot submit"
scancel "$probe"
next=$((${probe%%;*} + 1))
size=$(TRAINCTL_SIGNALS=none python3 - <<'PY'
import os, tempfile, trainctl
path = tempfile.mkdtemp() + "/s"
os.environ["TRAINCTL_STATE"] = path
c = trainctl.Controller()  # the state file exists while the controller does
print(os.path.getsize(path))
c.close()
PY
)
[ "$size" -gt 1000 ] || fail "could not learn the node state size ($size)"
as mallory bash -s "$alice_uid" "$next" "$size" <<'SQUAT' || fail "mallory's squatting script failed"
uid=$1 next=$2 size=$3
dir=/dev/shm/trainctl-$uid
mkdir -p "$dir" && chmod 777 "$dir"
# The next names anyone can guess (trainctl used .1 to .16 once), and a few of the
# random kind: 17 and more names that are hers.
for k in $(seq 1 16); do mkdir -p "$dir.$k" && chmod 777 "$dir.$k"; done
for guess in 000000 AAAAAA aaaaaa zzzzzz; do mkdir -p "$dir-$guess" && chmod 700 "$dir-$guess"; done
for job in $(seq "$next" $((next + 20))); do
  for step in 0 1 2 batch extern; do
    for node in n1 n2 n3; do
      name=$job.$step-$node
      head -c "$size" /dev/zero >"$dir/$name" && chmod 666 "$dir/$name"
      : >"$dir/$name.lock" && chmod 644 "$dir/$name.lock"
      head -c "$size" /dev/zero >"/dev/shm/trainctl-$uid-$name" 2>/dev/null && chmod 666 "/dev/shm/trainctl-$uid-$name"
      : >"/dev/shm/trainctl-$uid-$name.lock" 2>/dev/null
    done
  done
  ln -sf "/home/alice/.bashrc" "$dir/$job.0-n1.new.1" 2>/dev/null || true
done
SQUAT
[ "$(stat -c %U "/dev/shm/trainctl-$alice_uid")" = mallory ] || fail "the squat did not take"

# bob, in the team's project directory, plants links where the template's loop writes
# (issue 33): SAVING, which the loop makes while it saves, to a file of alice's, and a
# newest-looking checkpoint of his own to resume from.
as alice mkdir -p "$TEST_DIR/ckpt"
precious=/home/alice/precious
echo keep >"$precious"
chown alice "$precious"
as bob bash -s "$TEST_DIR/ckpt" "$precious" <<'PLANT' || fail "bob's planting failed"
ln -s "$2" "$1/SAVING"
mkdir -p "$1/bobs" && echo 99999 >"$1/bobs/COMPLETE"
ln -s "$1/bobs" "$1/step_00099999"
mkdir -p "$1/step_00088888" && echo 88888 >"$1/step_00088888/COMPLETE"
PLANT

log "job 1 ($MODE): deadline and bob's save, on nodes where mallory owns alice's state names"
# The help whole, then searched: `sbatch --help | grep -q` fails under pipefail whenever
# grep has its match and leaves before sbatch has written the rest (SIGPIPE).
if [ "$MODE" = plugin ]; then
  help=$(as alice sbatch --help 2>&1) || fail "sbatch --help failed for alice: $help"
  grep -q graceful-exit <<<"$help" ||
    fail "the plugin does not load for alice: $(grep -i -E 'error|spank' <<<"$help" | head -3)"
fi
# shellcheck disable=SC2016  # expanded when the hook runs
printf '#!/bin/sh\necho "$TRAINCTL_NOTICE" >>%s/hook.log\n' "$TEST_DIR" >"$TEST_DIR/hook.sh"
chmod 755 "$TEST_DIR/hook.sh"
chown alice "$TEST_DIR/hook.sh"
supervised_job "$TEST_DIR/job1.sh" --graceful-exit=1 --kill-switch="$sw/KILL" --save-switch="$sw/SAVE" \
  --on-notice="$TEST_DIR/hook.sh"
chmod 755 "$TEST_DIR/job1.sh"
job=$(as alice sbatch --parsable -N2 --ntasks-per-node=1 --time=2 "${JOB_OPTS[@]}" -o "$TEST_DIR/job1.out" \
  "$TEST_DIR/job1.sh") || fail "alice's sbatch was refused"
job=${job%%;*}
SUBMITTED+=("$job")
{ [ "$job" -ge "$next" ] && [ "$job" -le $((next + 20)) ]; } || fail "job $job is not among the ids mallory squatted"
[ "$(job_field "$job" UserId)" = "alice($alice_uid)" ] || fail "job $job does not run as alice: $(job_field "$job" UserId)"
wait_for 120 "4 ranks started" events_at_least start 4
if [ "$MODE" = plugin ]; then
  [ "$(stat -c '%U %a' "/run/trainctl/$alice_uid")" = "alice 700" ] ||
    fail "no private /run/trainctl/$alice_uid while job 1 runs: $(stat -c '%U %a' "/run/trainctl/$alice_uid" 2>&1)"
fi
alice_ranks_past() { TEST_USER=alice ranks_past "$@"; }
wait_for 60 "alice's ranks past step 20" alice_ranks_past "$job" 4 20
log "bob touches the save switch"
as bob touch "$sw/SAVE" || fail "bob cannot touch alice's save switch"
wait_for 40 "4 saves" events_at_least save 4
wait_for 120 "job 1 to end" job_ended "$job"
read -r n steps reasons < <(exit_summary)
[ "$(job_state "$job")" = COMPLETED ] || fail "job 1 ended $(job_state "$job"), not COMPLETED"
{ [ "$n" = 4 ] && [ "$steps" = 1 ]; } || fail "expected 4 ranks to exit at one step; got $n at $steps steps"
case "$reasons" in deadline | signal) ;; *) fail "job 1: expected the deadline notice, got '$reasons'" ;; esac
# The squat denies nothing: under the plugin alice's state lives in /run/trainctl/<uid>,
# which root made for her; without it, in a private directory of hers with a random
# name, said in one line. Either
# way the state is shared, so the notice hook runs once.
if [ "$MODE" = plugin ]; then
  # Her last job on the node ended: the job epilog removed the directory, and what
  # the job's hook claimed in it (issue 33: /run is cleaned, its size bounded).
  [ ! -e "/run/trainctl/$alice_uid" ] ||
    fail "/run/trainctl/$alice_uid outlived alice's last job: $(ls -la "/run/trainctl/$alice_uid" 2>&1)"
  if grep -q "node state" "$TEST_DIR/job1.out"; then fail "job 1 complained about its node state: $(grep 'node state' "$TEST_DIR/job1.out")"; fi
else
  grep -qE "/dev/shm/trainctl-$alice_uid belongs to mallory.*node state on this node is in /dev/shm/trainctl-$alice_uid-[A-Za-z0-9]{6} instead" \
    "$TEST_DIR/job1.out" ||
    fail "no line naming mallory's directory and the one used instead: $(grep -i 'node state' "$TEST_DIR/job1.out" | head -3)"
fi
[ "$(grep -c deadline "$TEST_DIR/hook.log")" = 1 ] || fail "the deadline hook ran $(grep -c deadline "$TEST_DIR/hook.log") times, not once"
[ "$(stat -c %U /home/alice/.bashrc)" = alice ] || fail "alice's .bashrc changed owner"
[ "$(cat "$precious")" = keep ] || fail "a save through bob's SAVING link changed alice's file: $(head -c 100 "$precious")"
[ -L "$TEST_DIR/ckpt/SAVING" ] || fail "bob's SAVING link went without a trace"
if grep -h '"start"' "$TEST_DIR"/events/rank*.jsonl | grep -v '"resumed_from": null'; then
  fail "job 1 resumed from a checkpoint (only bob's were there)"
fi
log "job 1: COMPLETED at the deadline ($reasons), bob's save taken by all 4 ranks, the hook ran once, mallory's squat denied nothing, bob's links touched nothing"

log "alice's own private state directory: mallory can plant nothing in it"
rm -rf "/dev/shm/trainctl-$alice_uid" "/dev/shm/trainctl-$alice_uid"-* "/dev/shm/trainctl-$alice_uid".*
rm -rf "/run/trainctl/$alice_uid"/*  # job 1's once-per-run markers
rm -rf "$TEST_DIR/events"
as alice mkdir -p "$TEST_DIR/events"
supervised_job "$TEST_DIR/job2.sh" --kill-switch="$sw/KILL" --save-switch="$sw/SAVE"
chmod 755 "$TEST_DIR/job2.sh"
job=$(as alice sbatch --parsable -N2 --ntasks-per-node=1 --time=5 "${JOB_OPTS[@]}" -o "$TEST_DIR/job2.out" \
  "$TEST_DIR/job2.sh") || fail "alice's second sbatch was refused"
job=${job%%;*}
SUBMITTED+=("$job")
wait_for 120 "4 ranks started" events_at_least start 4
dir=/dev/shm/trainctl-$alice_uid
[ "$MODE" = plugin ] && dir=/run/trainctl/$alice_uid
[ "$(stat -c '%U %a' "$dir")" = "alice 700" ] || fail "alice's state directory is $(stat -c '%U %a' "$dir")"
if as mallory touch "$dir/$job.0-n1.lock" 2>/dev/null; then fail "mallory planted a file in alice's state directory"; fi
if as mallory touch "$sw/KILL" 2>/dev/null; then fail "mallory touched alice's kill switch"; fi
if grep -q "node state" "$TEST_DIR/job2.out"; then fail "job 2 complained about its node state: $(grep 'node state' "$TEST_DIR/job2.out")"; fi
log "bob touches the kill switch"
as bob touch "$sw/KILL" || fail "bob cannot touch alice's kill switch"
wait_for 60 "job 2 to end" job_ended "$job"
read -r n steps reasons < <(exit_summary)
[ "$(job_state "$job")" = COMPLETED ] || fail "job 2 ended $(job_state "$job"), not COMPLETED"
{ [ "$n" = 4 ] && [ "$steps" = 1 ] && [ "$reasons" = kill-switch ]; } ||
  fail "job 2: expected 4 ranks to exit at one step for the kill switch; got $n at $steps steps: $reasons"
resumed=$(grep -h '"start"' "$TEST_DIR"/events/rank0.jsonl | grep -o '"resumed_from": [^,}]*' | head -1)
case "$resumed" in
  *99999 | *88888) fail "job 2 resumed from bob's checkpoint: $resumed" ;;
  *\"resumed_from\":\ [0-9]*) ;;
  *) fail "job 2 did not resume from job 1's checkpoint: $resumed" ;;
esac
[ "$(cat "$precious")" = keep ] || fail "job 2's saves changed alice's file"
state_dir_empty() { [ -z "$(ls -A "$dir" 2>/dev/null)" ]; }
wait_for 30 "alice's node state files to be removed" state_dir_empty
log "PASS ($MODE): mallory's squat changed nothing and was named; alice's directory is hers alone; bob's save and kill switch worked"
