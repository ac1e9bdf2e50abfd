#!/usr/bin/env bash
# e2e-modes: run plugin
# e2e-core: plugin run
# MPI users get check() semantics without torch: train_example.py --mpi agrees through
# Controller.check(step, allreduce=trainctl.mpi_allreduce(comm)) over a real Open MPI
# (Debian's openmpi-bin and python3-mpi4py). Launched two ways, each under the mode's
# supervisor (trainctl-run, or the SPANK plugin's options given to sbatch):
#   1. srun --mpi=pmix, 2 ranks on one node (in this one-host bed the nodes' slurmstepds
#      would share PMIx's directory in /tmp, so srun's MPI steps stay on one node);
#   2. mpirun inside the batch script, 3 ranks over 3 nodes (--mca btl self,tcp).
# One touch of the save switch: every rank saves once, at one step. Then the kill switch
# (srun) or a notice, scancel --signal=USR1 (mpirun): every rank exits at one step for
# that reason; the launcher survives and the job ends COMPLETED. Under the plugin the
# orted steps' supervisor lines reach the job's output.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

command -v mpirun >/dev/null || fail "mpirun is missing: scripts/install-deps installs openmpi-bin"
/usr/bin/python3 -c 'import mpi4py' || fail "mpi4py is missing: scripts/install-deps installs python3-mpi4py"

export KILL_SWITCH=$TEST_DIR/KILL SAVE_SWITCH=$TEST_DIR/SAVE TRAINCTL_POLL_INTERVAL=1s
TRAIN_CMD="/usr/bin/python3 $TRAIN --mpi --ckpt-dir $TEST_DIR/ckpt --steps 100000 --step-time 0.05"
MPIRUN="mpirun --allow-run-as-root --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo"

# agree_on EVENT COUNT: every one of COUNT ranks wrote EVENT at one and the same step.
agree_on() {
  python3 - "$TEST_DIR" "$1" "$2" <<'PY'
import glob, json, sys
d, event, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
ev = [json.loads(l) for f in glob.glob(d + "/events/rank*.jsonl") for l in open(f) if '"%s"' % event in l]
steps = sorted({e["step"] for e in ev})
reasons = sorted({e.get("reason", e.get("why", "")) for e in ev})
assert len(ev) == count and len(steps) == 1, "%d %s events at steps %s, expected %d at one step" % (len(ev), event, steps, count)
print("%d ranks: %s at step %d (%s)" % (count, event, steps[0], ",".join(reasons)))
PY
}

# run_case NAME RANKS HOW JOB_SCRIPT SBATCH_ARGS...: submits, touches the save switch,
# then ends the run HOW: kill-switch (touched) or signal (scancel --signal=USR1), checks.
run_case() {
  local name=$1 ranks=$2 how=$3 script=$4 job
  shift 4
  rm -rf "$TEST_DIR/events" "$TEST_DIR/ckpt" "$KILL_SWITCH" "$SAVE_SWITCH"
  if [ "$MODE" = plugin ]; then
    job=$(submit --kill-switch="$KILL_SWITCH" --save-switch="$SAVE_SWITCH" "$@" -o "$TEST_DIR/$name.out" "$script")
  else
    job=$(submit "$@" -o "$TEST_DIR/$name.out" "$script")
  fi
  log "$name: job $job, $ranks ranks"
  wait_for 120 "$ranks ranks started" events_at_least start "$ranks"
  sleep 1
  touch "$SAVE_SWITCH"
  wait_for 30 "$ranks saves" events_at_least save "$ranks"
  sleep 2  # room for a wrong second save
  agree_on save "$ranks" || fail "$name: the save was not agreed"
  if [ "$how" = kill-switch ]; then touch "$KILL_SWITCH"; else scancel --signal=USR1 "$job"; fi
  wait_for 60 "the job to end" job_ended "$job"
  agree_on exit "$ranks" || fail "$name: the exit was not agreed"
  grep -q "\"reason\": \"$how\"" "$TEST_DIR"/events/rank0.jsonl || fail "$name: rank 0's exit reason is not $how"
  [ "$(job_state "$job")" = COMPLETED ] || fail "$name: job ended $(job_state "$job"), not COMPLETED: $(cat "$TEST_DIR/$name.out")"
  log "$name: agreed save and exit, job COMPLETED"
}

if [ "$MODE" = plugin ]; then wrap=""; else wrap="$BUILD/bin/trainctl-run --kill-switch --save-switch --"; fi

# Open MPI 5 and later launch their daemons through PRRTE, which cannot start them where
# every node is this one host (5.0.7, Debian 13, segfaults in prte_check_host_is_local;
# 6.0.0rc2, sid, fails its daemons' RML set-up): a limit of the test bed, not of trainctl.
ompi=$(mpirun --version 2>/dev/null | grep -o '[0-9][0-9.]*' | head -1)
mpirun_usable=yes
[ "${ompi%%.*}" -lt 5 ] || mpirun_usable=no
# SLURM's pmix plugin must load against the system's PMIx (sid's 26.05 does not load
# with its PMIx 7.0.0rc1: "Cannot create context for mpi/pmix").
pmix_usable=yes
if ! why=$(srun --mpi=pmix -N1 -n1 true 2>&1); then
  pmix_usable=no
  log "srun --mpi=pmix part not run: this SLURM's pmix plugin does not load here: $(grep -m1 error <<<"$why")"
fi
if [ "$pmix_usable" = no ] && [ "$mpirun_usable" = no ]; then
  log "SKIP: neither srun --mpi=pmix nor mpirun (Open MPI $ompi) can start MPI ranks on this test cluster"
  exit 77
fi

if [ "$pmix_usable" = yes ]; then
cat >"$TEST_DIR/srun.sh" <<JOB
#!/bin/bash
srun --mpi=pmix -N1 -n2 $wrap $TRAIN_CMD --events "$TEST_DIR/events/rank{rank}.jsonl"
JOB
run_case srun 2 kill-switch "$TEST_DIR/srun.sh" -N1 -n2 --time=10
fi

if [ "$mpirun_usable" = no ]; then
  log "mpirun part not run: Open MPI $ompi cannot start its daemons on a one-host test cluster (see README)"
  log "PASS (srun --mpi=pmix only)"
  exit 0
fi

cat >"$TEST_DIR/mpirun.sh" <<JOB
#!/bin/bash
$wrap $MPIRUN -np 3 $TRAIN_CMD --events "$TEST_DIR/events/rank{rank}.jsonl"
echo "mpirun exited with status \$?"
JOB
run_case mpirun 3 signal "$TEST_DIR/mpirun.sh" -N3 -n3 --time=10
grep -q "mpirun exited with status 0" "$TEST_DIR/mpirun.out" || fail "mpirun did not survive: $(cat "$TEST_DIR/mpirun.out")"
if [ "$MODE" = plugin ]; then
  # mpirun starts its orted steps with their output thrown away: the supervisors there
  # write to the job's own file instead.
  for n in n2 n3; do
    grep -q "^trainctl-run\[$n task [0-9]*\]: received SIGUSR1" "$TEST_DIR/mpirun.out" ||
      fail "no line from the orted step's supervisor on $n: $(grep trainctl "$TEST_DIR/mpirun.out")"
  done
fi
[ ! -e "$TRAINCTL_LOG_DIR/slow_nodes" ] || fail "an even run reported a straggler: $(cat "$TRAINCTL_LOG_DIR/slow_nodes")"
log "PASS"
