#!/usr/bin/env bash
# trainctl drill on four loops that each break one thing, run side by side (the
# template): each drill exits 1 with the line that names what is broken, and its files
# are kept to look at.
#   never-resumes  task 2 starts at step 0 (each task its own checkpoint directory)
#   slow-save      saves take 40 s with a 30 s graceful exit: a deadline save would be cut
#   unmarked-eval  a 45 s evaluation not marked as a phase, with a 30 s hang timeout
#   no-check       a loop that never calls check() (the drill waits 30 s for one)
# Three run under trainctl-run on 2 nodes. slow-save runs under the SPANK plugin, as an
# admin's users run the template: its plugin line uncommented (--graceful-exit=30s
# ... --hang-timeout=8m --hang-action=end-step), on one node of two ranks (-N1). The
# drill's own --hang-timeout=30s --hang-action=alert on sbatch's command line must win
# over that line (an 8-minute timeout leaves no hang to see; end-step ends task 1 before
# its deadline), and with two ranks, one stopped and one waiting for it, the stacks
# single out neither: the hang row is ok and says so instead of naming the waiting rank.
# Two more drills are ended as they start: one killed with SIGKILL (its own cancel
# cannot run: the reaper it forked cancels the array), one sent SIGHUP as a closed terminal
# does (it cancels the array itself); neither leaves a task of its array. First, three
# scripts a drill cannot keep apart from the real run are refused. Beside the four, a sound
# job of one process (`srun python`, no launcher) rehearses clean: exit 0.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
use_train_template "--steps 100000 --step-time 0.05"
export TRAINCTL_SAVE_TIMES_DIR=$TEST_DIR/state/save_times

# Scripts whose paths a drill cannot make its own are refused before anything is
# submitted (issue 63): a checkpoint directory written into the script; one taken from
# CKPT_DIR, which --export=NONE keeps from the job; a save switch's path.
mkdir -p "$TEST_DIR/fixed"
cat >"$TEST_DIR/fixed/fixed-ckpt.slurm" <<'JOB'
#!/bin/bash
#SBATCH -N1
srun trainctl-run --kill-switch -- python3 train.py --ckpt-dir /scratch/real-run/checkpoints
JOB
cat >"$TEST_DIR/fixed/export-none.slurm" <<'JOB'
#!/bin/bash
#SBATCH -N1
#SBATCH --export=NONE
CKPT_DIR=${CKPT_DIR:-/scratch/real-run/checkpoints}
srun trainctl-run --kill-switch -- python3 train.py --ckpt-dir "$CKPT_DIR"
JOB
cat >"$TEST_DIR/fixed/switch.slurm" <<'JOB'
#!/bin/bash
#SBATCH -N1
srun trainctl-run --save-switch=/scratch/real-run/SAVE -- python3 train.py --ckpt-dir "$CKPT_DIR"
JOB
refused() {  # refused SCRIPT LINE: the drill of SCRIPT exits 2 with LINE and submits nothing
  local rc=0
  (cd "$TEST_DIR/fixed" && trainctl drill "$1" >out 2>err) || rc=$?
  [ "$rc" = 2 ] || fail "the drill of $1 exited $rc, not 2: $(cat "$TEST_DIR/fixed/err")"
  grep -qF "trainctl drill: $2" "$TEST_DIR/fixed/err" || fail "the drill of $1 said: $(cat "$TEST_DIR/fixed/err")"
  [ -z "$(squeue -h -u "$(id -un)" -n "$1-drill" -o %i)" ] || fail "the drill of $1 submitted a job"
  [ -z "$(find "$TEST_DIR/fixed" -name 'trainctl-drill-*')" ] || fail "the drill of $1 left its directory"
}
refused fixed-ckpt.slurm "fixed-ckpt.slurm:3: the checkpoint path /scratch/real-run/checkpoints is the real run's too"
refused export-none.slurm "export-none.slurm:4: the checkpoint path /scratch/real-run/checkpoints is the real run's too, so the drill would resume from and commit into the real run's checkpoints (--export=NONE keeps the drill's CKPT_DIR from the job)"
refused switch.slurm "switch.slurm:3: --save-switch=/scratch/real-run/SAVE is the real run's switch too"
log "three scripts with the real run's paths written into them were refused, nothing submitted"

for how in KILL HUP; do
  mkdir -p "$TEST_DIR/ended-$how" && cp "$TEST_DIR/train.slurm" "$TEST_DIR/ended-$how/"
  (cd "$TEST_DIR/ended-$how" && exec trainctl drill train.slurm -J "ended-$how" >out 2>err) &
  echo "$!" >"$TEST_DIR/ended-$how/pid"
done
for how in KILL HUP; do
  submitted() { grep -q "^trainctl drill: array [0-9]* " "$TEST_DIR/ended-$how/out"; }
  wait_for 60 "the $how drill's array" submitted
  array=$(sed -n 's/^trainctl drill: array \([0-9]*\) .*/\1/p' "$TEST_DIR/ended-$how/out")
  echo "$array" >>"$TEST_DIR/.submitted"
  pid=$(cat "$TEST_DIR/ended-$how/pid")
  kill -"$how" "$pid"
  rc=0
  wait "$pid" || rc=$?
  case $how in
    KILL) [ "$rc" = 137 ] || fail "the drill sent SIGKILL exited $rc" ;;
    HUP) [ "$rc" = 1 ] || fail "the drill sent SIGHUP exited $rc, not 1: $(cat "$TEST_DIR/ended-HUP/err")" ;;
  esac
  gone() { [ -z "$(squeue -h -r -j "$1" -o %i 2>/dev/null)" ]; }
  wait_for 60 "array $array to be cancelled after the drill's SIG$how" gone "$array"
  log "the drill ended by SIG$how (exit $rc): its array $array cancelled"
done
grep -q "interrupted; array [0-9]* cancelled" "$TEST_DIR/ended-HUP/err" ||
  fail "the drill sent SIGHUP did not say it cancelled its array: $(cat "$TEST_DIR/ended-HUP/err")"
# drill CASE [--plugin LINE] ENV... -- DRILL_OPTIONS... [-- SBATCH_OPTIONS...]: one drill
# in its own submit directory, in the background; --plugin uncomments the template's
# plugin line as LINE.
drill() {
  local case=$1
  shift
  mkdir -p "$TEST_DIR/$case" && cp "$TEST_DIR/train.slurm" "$TEST_DIR/$case/"
  if [ "$1" = --plugin ]; then
    sed -i "s/^##SBATCH --graceful-exit=.*/#SBATCH $2/" "$TEST_DIR/$case/train.slurm"
    grep -q "^#SBATCH $2\$" "$TEST_DIR/$case/train.slurm" || fail "$case: the template has no plugin line to uncomment"
    shift 2
  fi
  (
    cd "$TEST_DIR/$case" || exit 1
    while [ "$1" != -- ]; do export "${1?}"; shift; done
    shift
    local opts=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    [ $# -eq 0 ] || shift
    rc=0
    trainctl drill "${opts[@]}" train.slurm -J "$case" "$@" >out 2>err || rc=$?
    echo "$rc" >rc
  ) &
}
broken=$SRC/tests/e2e/broken_loop.py
drill never-resumes TRAIN_SCRIPT="$broken" BROKEN=never-resumes --
grep -q trainctl "$TRAINCTL_CLUSTER_PLUGSTACK" || fail "the plugin is not in plugstack.conf"
drill slow-save --plugin "--graceful-exit=30s --kill-switch --save-switch --hang-timeout=8m --hang-action=end-step" \
  TRAIN_ARGS="--steps 100000 --step-time 0.05 --save-time 40" -- -- -N1
drill unmarked-eval TRAIN_SCRIPT="$broken" BROKEN=unmarked-eval HANG_TIMEOUT=30s \
  TRAIN_ARGS="--steps 100000 --step-time 0.05 --eval-every 20 --eval-time 45" --
drill no-check TRAIN_SCRIPT="$broken" BROKEN=no-check -- --start-timeout=30s
# A sound job of one process, as a new user writes it (issue 63): one node, `srun python`,
# no launcher, so its rank is SLURM_PROCID's. The drill stops rank 0 for the hang, skips
# the rank it cannot kill, and finds nothing to fix: exit 0.
mkdir -p "$TEST_DIR/one-process"
cat >"$TEST_DIR/one-process/loop.slurm" <<JOB
#!/bin/bash
#SBATCH -N1
#SBATCH -n1
CKPT_DIR=\${CKPT_DIR:-\$SLURM_SUBMIT_DIR/checkpoints/\$SLURM_JOB_NAME}
srun trainctl-run --graceful-exit=30s --kill-switch --save-switch --hang-timeout=30s -- \\
  python3 $SRC/slurm_templates/train_example.py --ckpt-dir "\$CKPT_DIR" --steps 100000 --step-time 0.05
JOB
(
  cd "$TEST_DIR/one-process" || exit 1
  rc=0
  trainctl drill loop.slurm -J one-process >out 2>err || rc=$?
  echo "$rc" >rc
) &
all_done() { for c in never-resumes slow-save unmarked-eval no-check one-process; do [ -f "$TEST_DIR/$c/rc" ] || return 1; done; }
wait_for 480 "the five drills to end" all_done
sed -n 's/^trainctl drill: array \([0-9]*\) .*/\1/p' "$TEST_DIR/one-process/out" >>"$TEST_DIR/.submitted"
echo "--- one-process (exit $(cat "$TEST_DIR/one-process/rc"))"
cat "$TEST_DIR/one-process/out" "$TEST_DIR/one-process/err"
[ "$(cat "$TEST_DIR/one-process/rc")" = 0 ] || fail "one-process: the drill of a sound one-process job exited $(cat "$TEST_DIR/one-process/rc"), not 0"
grep -qE "^ok +hang .*rank 0 stopped on n[1-3]; stacks " "$TEST_DIR/one-process/out" ||
  fail "one-process: the hang row did not stop and find rank 0"
if grep -q "^FAIL " "$TEST_DIR/one-process/out"; then fail "one-process: a row failed"; fi
grep -q "^verdict: ready for the long run$" "$TEST_DIR/one-process/out" || fail "one-process: no clean verdict"
if grep -q "too little margin" "$TEST_DIR/one-process/out"; then fail "one-process: a 30 s lead called too little for its saves"; fi
for c in never-resumes slow-save unmarked-eval no-check; do
  sed -n 's/^trainctl drill: array \([0-9]*\) .*/\1/p' "$TEST_DIR/$c/out" >>"$TEST_DIR/.submitted"
  echo "--- $c (exit $(cat "$TEST_DIR/$c/rc"))"
  cat "$TEST_DIR/$c/out" "$TEST_DIR/$c/err"
  [ "$(cat "$TEST_DIR/$c/rc")" = 1 ] || fail "$c: the drill exited $(cat "$TEST_DIR/$c/rc"), not 1"
  grep -q "^verdict: fix " "$TEST_DIR/$c/out" || fail "$c: no verdict to fix"
  grep -q "files\|checkpoints, logs and stacks are in" "$TEST_DIR/$c/err" || fail "$c: the drill did not say where its files are"
done
grep -qE "^FAIL +resume .*task 2 started at step 0 \(task 1's last save: step [0-9]+\)" "$TEST_DIR/never-resumes/out" ||
  fail "never-resumes: no failed resume row at step 0"
grep -q "^task 2 started at step 0 although task 1 had saved: the loop does not resume" "$TEST_DIR/never-resumes/out" ||
  fail "never-resumes: no line saying the loop does not resume"
grep -qE "^the save took 4[0-9.]+s; the lead is 30.0s: a deadline save would be cut; use --graceful-exit=" "$TEST_DIR/slow-save/out" ||
  fail "slow-save: no line saying the deadline save would be cut"
grep -qE "^ok +hang .*rank 1 stopped on n[1-3]; stacks .* with so few ranks the stacks single out none, and the summary says so: 2 ranks in 2 frames, no one frame holding the most: rank 0 on n[1-3] in .*; rank 1 on n[1-3] in .*\(the drill's 30.0s for your 8m\)" "$TEST_DIR/slow-save/out" ||
  fail "slow-save (plugin): the hang row does not say that two ranks cannot be told apart, with the drill's 30 s for the script's 8m"
# The drill kills rank 1 once it has checked in, so its death is named with its rank.
grep -qE "^ok +rank killed .*rank 1's death named first \(SIGKILL on n[1-3]\)" "$TEST_DIR/slow-save/out" ||
  fail "slow-save (plugin): the killed rank's death is not named with its rank"
grep -q "supervised by trainctl's SPANK plugin" "$TEST_DIR"/slow-save/trainctl-drill-slow-save-*/*.out ||
  fail "slow-save: the drill's tasks did not run under the plugin"
grep -qE "^FAIL +hang .*a hang was found .* before any rank was stopped" "$TEST_DIR/unmarked-eval/out" ||
  fail "unmarked-eval: no failed hang row before the drill's stop"
grep -q "^a hang was found before the drill stopped any rank: part of the loop runs longer than --hang-timeout=30s" \
  "$TEST_DIR/unmarked-eval/out" || fail "unmarked-eval: no line saying to mark the phase"
grep -qE "^FAIL +start-up .*task 1 ran 30.0s and no rank reached check\(\)" "$TEST_DIR/no-check/out" ||
  fail "no-check: no failed start-up row"
grep -q "^the loop never reached trainctl's check()" "$TEST_DIR/no-check/out" || fail "no-check: no line saying so"
log "PASS: each broken loop got its line: never resumes, a save longer than the lead (under the plugin, two ranks not told apart), an unmarked evaluation, no check()"
