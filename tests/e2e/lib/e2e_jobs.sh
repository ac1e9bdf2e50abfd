# shellcheck shell=bash
# Job scripts: the launcher, the training loop under it, the template, the supervised job of each mode.
# Sourced by tests/e2e/lib.sh: functions only, nothing runs when it is sourced.

# launcher_words PORT: the launcher of 2 ranks per node, static rendezvous on PORT:
# torchrun's process model (TORCHRUN above; real torchrun where E2E_TORCH=1), or with
# E2E_LAUNCHER=accelerate Hugging Face's `accelerate launch` (both real ones through the
# shim, see torchrun_shim.py). \$ parts expand in the job.
launcher_words() {
  local words=("${TORCHRUN[@]}")
  [ -z "${E2E_TORCH:-}" ] || words=("${REAL_TORCHRUN[@]}")
  if [ "${E2E_LAUNCHER:-torchrun}" = accelerate ]; then
    echo "${REAL_TORCHRUN[*]} --accelerate launch --multi_gpu --num_machines \$SLURM_NNODES" \
      "--num_processes \$((SLURM_NNODES * 2)) --machine_rank \$SLURM_NODEID" \
      "--main_process_ip 127.0.0.1 --main_process_port $1 --rdzv_backend static"
  else
    echo "${words[*]} --nnodes=\$SLURM_NNODES --nproc_per_node=2 ${LAUNCHER_ARGS:-}" \
      "--rdzv_backend=static --master_addr=127.0.0.1 --master_port=$1 --node_rank=\$SLURM_NODEID"
  fi
}

# write_torchrun_job FILE WRAPPER...: a batch script that runs the launcher with 2 ranks
# on each node under srun, each launcher wrapped by WRAPPER (e.g. trainctl-run ... --),
# and the example training loop writing events. What the job runs is stated by these
# variables of the call (VAR=value write_torchrun_job ..., or supervised_job):
#   STEPS          steps to train (100000)
#   TRAIN_ARGS     more arguments of the training loop (faults, save and step times)
#   CKPT_DIR       its checkpoints ($TEST_DIR/ckpt)
#   EVENTS_DIR     its events, rank{rank}.jsonl ($TEST_DIR/events)
#   TRAIN_SCRIPT   the loop ($TRAIN)
#   LAUNCHER_ARGS  more arguments of the launcher (--max_restarts=1)
#   E2E_TORCH=1    real torchrun for this job, in a test that runs light_launcher.py
#   TRAINCTL_RUN   the trainctl-run of the "run" mode's job ($BUILD/bin/trainctl-run), e.g.
#                  the wheel's
write_torchrun_job() {
  local file=$1 port
  shift
  port=$(free_port)
  local batch_line=""
  # Without the plugin the batch script puts itself under trainctl-run --batch, which
  # requeues the job when its ranks saved and exited during a preemption.
  # shellcheck disable=SC2016  # expanded when the job runs
  [ $# -gt 0 ] && batch_line='[ "${TRAINCTL_SUPERVISED:-}" = "$SLURM_JOB_ID" ] || exec '"${TRAINCTL_RUN:-$BUILD/bin/trainctl-run}"' --batch -- "$0" "$@"'
  cat >"$file" <<JOB
#!/bin/bash
$batch_line
srun --ntasks-per-node=1 bash -c 'exec $* $(launcher_words "$port") \
  ${TRAIN_SCRIPT:-$TRAIN} --ckpt-dir ${CKPT_DIR:-$TEST_DIR/ckpt} --steps ${STEPS:-100000} --step-time 0.05 ${TRAIN_ARGS:-} \
  --events "${EVENTS_DIR:-$TEST_DIR/events}/rank{rank}.jsonl"'
JOB
}

# use_train_template TRAIN_ARGS: slurm_templates/train.slurm and train_example.py as
# users copy them, into $TEST_DIR (the current directory from then on), with what the
# template reads set for the local cluster: torchrun through the shim, static
# rendezvous, 2 ranks per node, trainctl-run from the build, graceful exit 1 minute.
use_train_template() {
  local torchrun_cmd="${TORCHRUN[*]}"
  cp "$SRC/slurm_templates/train.slurm" "$SRC/slurm_templates/train_example.py" "$TEST_DIR/"
  cd "$TEST_DIR" || exit 1
  unset TORCHRUN  # the array above; the template takes a string
  # shellcheck disable=SC2178  # now the string the template reads
  export PATH=$BUILD/bin:$PATH LAUNCHER=torchrun TORCHRUN=$torchrun_cmd RDZV=static GPUS_PER_NODE=2 \
    GRACEFUL_EXIT=1 TRAIN_SCRIPT=$TEST_DIR/train_example.py TRAIN_ARGS="$1"
}

# MODE (first argument of a test that declares "# e2e-modes: run plugin"): "run" wraps
# each srun task in trainctl-run with the supervisor options; "plugin" passes them to
# sbatch, for the SPANK plugin. supervised_job FILE OPTIONS... writes the job script
# and sets JOB_OPTS to the options sbatch must get.
supervised_job() {
  local file=$1
  shift
  if [ "$MODE" = plugin ]; then
    grep -q trainctl "$TRAINCTL_CLUSTER_PLUGSTACK" || fail "the plugin is not in plugstack.conf"
    write_torchrun_job "$file"
    # shellcheck disable=SC2034
    JOB_OPTS=("$@")
  else
    write_torchrun_job "$file" "${TRAINCTL_RUN:-$BUILD/bin/trainctl-run}" "$@" --
    # shellcheck disable=SC2034
    JOB_OPTS=()
  fi
}

# ranks_past JOB RANKS STEP: trainctl status, as the job's user (TEST_USER, else this
# one), sees RANKS ranks of JOB (a job or an array task, 12_3), each past STEP: for a test
# that needs the loop some steps on, whatever the machine's load (wait_for 60 "..."
# ranks_past ...), instead of a sleep sized for an idle machine.
ranks_past() {
  local view
  if [ -n "${TEST_USER:-}" ]; then
    view=$(as_user "$BUILD/bin/trainctl" status --json "$1" 2>/dev/null) || return 1
  else
    view=$("$BUILD/bin/trainctl" status --json "$1" 2>/dev/null) || return 1
  fi
  python3 -c 'import json, sys
ranks = json.loads(sys.stdin.read())["ranks"]
steps = [r["step"] for r in ranks if r["step"] is not None]
sys.exit(0 if len(steps) >= int(sys.argv[1]) and min(steps) > int(sys.argv[2]) else 1)' "$2" "$3" <<<"$view"
}

# write_supervisor_probe FILE: a script, to source in a task, that prints its parent's
# command line once the parent is trainctl-run (on 22.05 the task forks: the parent execs the
# supervisor a moment after the child runs the command, so it looks again).
write_supervisor_probe() {
  cat >"$1" <<'SH'
for _ in $(seq 100); do
  cmd=$(tr '\0' ' ' </proc/$PPID/cmdline)
  case $cmd in *trainctl-run*) break ;; esac
  sleep 0.05
done
echo "$cmd"
SH
  chmod 644 "$1"
}
