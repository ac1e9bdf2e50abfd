# shellcheck shell=bash
# Sourced by the end-to-end tests: the local cluster, a scratch directory, bounded
# waits, and cleanup of every job the test submitted (by id) whatever happens.
set -euo pipefail

# python3 itself, not a version manager's shim: pyenv's (this machine's python3) is a
# shell script that costs about 0.4 CPU-s and 0.4 s a call, and the waits below call
# python3 every half second; in a test of 2 minutes that was 17 CPU-s of the 2 cores.
if py=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) && [ -x "$py" ] &&
  [ "$(command -v python3)" != "$py" ]; then
  PATH=${py%/*}:$PATH
fi
SRC=${TRAINCTL_SOURCE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${TRAINCTL_BUILD:-$SRC/build}
eval "$("$SRC/scripts/local-cluster" env)"
export SLURM_CONF
# The cluster's own configuration directory (its slurm.conf, plugstack.conf, variant),
# whichever slurm.conf this test's commands read.
CLUSTER_ETC=$(dirname "$SLURM_CONF")
# torch_compat/ for every Python process of the test and its jobs: its sitecustomize counts
# each process that imports torch (in $TRAINCTL_E2E_TORCH_COUNT, where the test command
# sets it) and mends Debian's torch under the shim.
PYTHON_PACKAGES=$BUILD/lib/python3/dist-packages  # the build's Python package, trainctl/
export PYTHONPATH=$PYTHON_PACKAGES:$SRC/tests/e2e/torch_compat
export TORCHRUN_SHIM=$SRC/tests/e2e/torchrun_shim.py
# The launcher the test's jobs run as torchrun: real torchrun (Debian's torch, through
# the shim) in a test whose header says why torch is its subject ("# e2e-torch: WHY");
# else light_launcher.py, torchrun's process model without torch (docs/contributing.md).
# LAUNCHER_SCRIPT is the file name its agent's command line holds.
REAL_TORCHRUN=(/usr/bin/python3 "$SRC/tests/e2e/torchrun_shim.py")
if grep -q '^# e2e-torch:' "$0" 2>/dev/null; then
  TORCHRUN=("${REAL_TORCHRUN[@]}")
  LAUNCHER_SCRIPT=torchrun_shim.py
else
  # shellcheck disable=SC2034  # used by the tests that source this file
  TORCHRUN=(/usr/bin/python3 "$SRC/tests/e2e/light_launcher.py")
  # shellcheck disable=SC2034
  LAUNCHER_SCRIPT=light_launcher.py
fi
# shellcheck disable=SC2034
TRAIN=$SRC/slurm_templates/train_example.py
TEST_DIR=$(mktemp -d /tmp/trainctl-e2e-XXXXXX)
# What jobs write for later ones (hang stacks, slow_nodes, the bad-node memory) stays in
# this test: one test's crash must not keep the next test's jobs off a node.
export TRAINCTL_LOG_DIR=$TEST_DIR/logs TRAINCTL_BAD_NODES=$TEST_DIR/state/bad_nodes
mkdir -p "$TRAINCTL_LOG_DIR"
SUBMITTED=()
# A test that edits the cluster's plugstack.conf (one that runs alone) saves it here first.
PLUGSTACK_SAVED=""

log() { printf '[%s] %s\n' "$(date +%T)" "$*"; }

cleanup() {
  local rc=$? j p
  # run_as_user: the user's processes go with the test (stopped ones too).
  for p in $(user_processes); do kill -CONT "$p" 2>/dev/null || true; done
  for p in $(user_processes); do kill -9 "$p" 2>/dev/null || true; done
  [ "$(type -t stop_alert_servers)" = function ] && stop_alert_servers
  # First: this test must not leave the next without the plugin.
  if [ -n "$PLUGSTACK_SAVED" ]; then cp "$PLUGSTACK_SAVED" "$CLUSTER_ETC/plugstack.conf"; fi
  # submit runs in $(...), a subshell: the ids it records there are read back here.
  if [ -f "$TEST_DIR/.submitted" ]; then mapfile -t -O "${#SUBMITTED[@]}" SUBMITTED <"$TEST_DIR/.submitted"; fi
  for j in "${SUBMITTED[@]}"; do scancel "$j" 2>/dev/null || true; done
  if [ "$rc" -ne 0 ]; then
    log "test failed; job output and events follow"
    for f in "$TEST_DIR"/*.out "$TEST_DIR"/events/*; do
      [ -f "$f" ] || continue
      # What trainctl said, whole (a traceback would push it out of the tail), then the tail.
      case "$f" in *.out) echo "--- $f (trainctl's lines)" && { grep -E '^trainctl' "$f" | head -n 120 || true; } ;; esac
      echo "--- $f"
      tail -n 40 "$f"
    done
  fi
  # Wait (bounded) for the cancelled jobs to leave the nodes before the next test, and
  # before the directory goes: a rank still saving writes into it. squeue lists every
  # task of an array by the array's id (job_state reads one task's state of several)
  # until its processes are gone (COMPLETING included).
  for j in "${SUBMITTED[@]}"; do
    for _ in $(seq 1 60); do
      squeue -h -j "$j" -o %i 2>/dev/null | grep -q . || break
      sleep 0.5
    done
  done
  if [ -n "${TRAINCTL_E2E_KEEP:-}" ]; then log "kept $TEST_DIR"; else rm -rf "$TEST_DIR"; fi
  exit "$rc"
}
trap cleanup EXIT

fail() {
  log "FAIL: $*"
  exit 1
}

# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND until it succeeds. COMMAND runs
# again each time: give a function, not "test \"$(...)\"", which is expanded once here.
wait_for() {
  local limit=$1 what=$2 end
  shift 2
  end=$((SECONDS + limit))
  until "$@"; do
    [ "$SECONDS" -lt "$end" ] || fail "timed out after ${limit}s waiting for: $what"
    sleep 0.5
  done
}

job_state() { scontrol show job -o "$1" 2>/dev/null | grep -o 'JobState=[A-Z_]*' | cut -d= -f2 || true; }
job_field() { scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | grep "^$2=" | cut -d= -f2- || true; }
# job_node JOB K: the K-th node of a job (rank K-1's node with one task per node): beside
# other tests a 2-node job may get any two of n1-n3.
job_node() { scontrol show hostnames "$(job_field "$1" NodeList)" | sed -n "${2}p"; }
job_ended() { case "$(job_state "$1")" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | PREEMPTED | OUT_OF_MEMORY | DEADLINE) return 0 ;; *) return 1 ;; esac; }

# submit ARGS...: sbatch --parsable, remembered for cleanup; prints the job id.
submit() {
  local id
  id=$(sbatch --parsable "$@") || fail "sbatch $* was refused"
  id=${id%%;*}
  SUBMITTED+=("$id")
  echo "$id" >>"$TEST_DIR/.submitted"  # for cleanup: this usually runs in a subshell
  echo "$id"
}

# free_port [COUNT]: the first of COUNT (default 1) consecutive TCP ports nobody listens on
# now, for a launcher's rendezvous. Below the kernel's ephemeral range, which the
# tests' own outgoing connections (torch's store clients, SLURM's RPCs) draw from: a
# port taken from that range is free when picked, but an outgoing connection could
# bind it before torchrun does (CI saw "errno 98, Address already in use"). Random, so
# that tests running side by side rarely pick the same one; picked ports are checked.
# shellcheck disable=SC2120  # COUNT is passed by the tests that source this file
free_port() {
  python3 - "${1:-1}" <<'PY'
import random, socket, sys
count = int(sys.argv[1])
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
top = min(low, 32768)  # below the ephemeral range, and below 32768, where it usually starts
if top - count <= 20000:
    sys.exit("free_port: the kernel's ephemeral ports start at %d (net.ipv4.ip_local_port_range), which leaves "
             "no %d ports between 20000 and them" % (low, count))
def free(port):
    for family, addr in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        try:
            s = socket.socket(family)
        except OSError:  # no IPv6 here
            continue
        with s:
            try:
                s.bind((addr, port))
            except OSError:
                return False
    return True
for _ in range(1000):
    first = random.randrange(20000, top - count)
    if all(free(p) for p in range(first, first + count)):
        print(first)
        sys.exit(0)
sys.exit("free_port: no %d free consecutive ports in 20000-%d" % (count, top))
PY
}

# events_count EVENT: how many lines of that event the ranks wrote so far.
# first_exit_after START: seconds (one decimal) from START, a SLURM timestamp such as
# the job's StartTime, to the first "exit" event of any rank in $TEST_DIR/events.
first_exit_after() {
  python3 -c 'import glob, json, sys, time
first = min(json.loads(l)["time"] for f in glob.glob(sys.argv[1] + "/events/*") for l in open(f) if "\"exit\"" in l)
print(round(first - time.mktime(time.strptime(sys.argv[2], "%Y-%m-%dT%H:%M:%S")), 1))' "$TEST_DIR" "$1"
}
events_count() { cat "$TEST_DIR"/events/rank*.jsonl 2>/dev/null | grep -c "\"event\": \"$1\"" || true; }
events_at_least() { [ "$(events_count "$1")" -ge "$2" ]; }

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
write_torchrun_job() {
  local file=$1 port
  shift
  port=$(free_port)
  local batch_line=""
  # Without the plugin the batch script puts itself under trainctl-run --batch, which
  # requeues the job when its ranks saved and exited during a preemption.
  # shellcheck disable=SC2016  # expanded when the job runs
  [ $# -gt 0 ] && batch_line='[ -n "${TRAINCTL_SUPERVISED:-}" ] || exec '"$BUILD"'/bin/trainctl-run --batch -- "$0" "$@"'
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

# array_states ARRAY: "task:state" of each task that started, and "rest:STATE" for the
# pending tasks cancelled before they started (they stay in the array's one record,
# whose ArrayTaskId is then SLURM's NO_VAL - 1).
array_states() {
  scontrol show job -o "$1" | awk '{
    t = ""; st = ""
    for (i = 1; i <= NF; i++) {
      if ($i ~ /^ArrayTaskId=/) t = substr($i, 13)
      if ($i ~ /^JobState=/) st = substr($i, 10)
    }
    print (t == "4294967294" ? "rest" : t) ":" st
  }' | sort | tr '\n' ' ' | sed 's/ $//'
}
array_gone() { [ -z "$(squeue -h -j "$1" 2>/dev/null)" ]; }

# template_events_count DIR EVENT: how many lines of EVENT the template's ranks wrote in
# DIR (its LOG_DIR); template_events_at_least DIR EVENT N.
template_events_count() { cat "$1"/rank*.jsonl 2>/dev/null | grep -c "\"event\": \"$2\"" || true; }
template_events_at_least() { [ "$(template_events_count "$1" "$2")" -ge "$3" ]; }
# template_deadline_then_resume DIR: the story of a template array with 4 ranks: task 1's
# ranks all save and exit at one step with reason deadline, and task 2 starts at the
# next step. Sets TASK1_STEP to that step.
template_deadline_then_resume() {
  local ev=$1 n1 r1 resumed
  wait_for 180 "task 1 to reach its deadline and exit" template_events_at_least "$ev" exit 4
  read -r n1 r1 TASK1_STEP < <(python3 - "$ev" <<'PY'
import glob, json, sys
ex = [json.loads(l) for f in glob.glob(sys.argv[1] + "/rank*.jsonl") for l in open(f) if '"exit"' in l]
print(len(ex), ",".join(sorted({e["reason"] for e in ex})), max(e["step"] for e in ex))
PY
  )
  { [ "$n1" = 4 ] && [ "$r1" = deadline ]; } || fail "task 1: $n1 exits, reasons $r1"
  log "task 1: all 4 ranks saved and exited at step $TASK1_STEP (deadline)"
  wait_for 150 "task 2 to resume" template_events_at_least "$ev" start 8
  resumed=$(cat "$ev"/rank*.jsonl | python3 -c 'import json,sys; print(sorted({json.loads(l)["step"] for l in sys.stdin if "\"start\"" in l and "\"resumed_from\": null" not in l}))')
  [ "$resumed" = "[$((TASK1_STEP + 1))]" ] || fail "task 2 started at $resumed, not at $((TASK1_STEP + 1))"
  log "task 2 resumed at step $((TASK1_STEP + 1))"
}

# The single reason every rank gave for exiting, and the number of ranks that exited.
exit_summary() {
  python3 - "$TEST_DIR" <<'PY'
import glob, json, sys
ex = [json.loads(l) for f in glob.glob(sys.argv[1] + "/events/rank*.jsonl") for l in open(f) if '"exit"' in l]
print(len(ex), len({e["step"] for e in ex}), ",".join(sorted({e["reason"] for e in ex})))
PY
}

# MODE (first argument of a test that declares "# e2e-modes: run plugin"): "run" wraps
# each srun task in trainctl-run with the supervisor options; "plugin" passes them to
# sbatch, for the SPANK plugin. supervised_job FILE OPTIONS... writes the job script
# and sets JOB_OPTS to the options sbatch must get.
MODE=${1:-run}
# In run mode this test's srun and sbatch (and those in its jobs, which inherit
# SLURM_CONF) read a slurm.conf without the plugin (scripts/local-cluster writes it), so
# trainctl-run is shown to work where no admin installed the plugin, while tests of the
# plugin run beside it.
if [ "$MODE" = run ] && [ -n "${1:-}" ]; then
  SLURM_CONF=$CLUSTER_ETC/without-plugin/slurm.conf
  [ -f "$SLURM_CONF" ] || { echo "no $SLURM_CONF: scripts/local-cluster up writes it" >&2; exit 1; }
fi
# shellcheck disable=SC2034  # read by the tests that source this file
JOB_OPTS=()
supervised_job() {
  local file=$1
  shift
  if [ "$MODE" = plugin ]; then
    grep -q trainctl "$TRAINCTL_CLUSTER_PLUGSTACK" || fail "the plugin is not in plugstack.conf"
    write_torchrun_job "$file"
    # shellcheck disable=SC2034
    JOB_OPTS=("$@")
  else
    write_torchrun_job "$file" "$BUILD/bin/trainctl-run" "$@" --
    # shellcheck disable=SC2034
    JOB_OPTS=()
  fi
}
TRAINCTL_CLUSTER_PLUGSTACK=$CLUSTER_ETC/plugstack.conf

# The cluster must run the proctrack variant this test was registered for.
if [ -n "${TRAINCTL_E2E_VARIANT:-}" ]; then
  running=$(cat "$CLUSTER_ETC/variant" 2>/dev/null || echo none)
  [ "$running" = "$TRAINCTL_E2E_VARIANT" ] || fail "the cluster runs $running, this test is for $TRAINCTL_E2E_VARIANT"
fi

# start_alert_servers: a real SMTP server (aiosmtpd) and an HTTP receiver on loopback,
# stopped by pid at cleanup. Sets SMTP_PORT, HTTP_PORT, MAILDIR, REQDIR and PLAN.
SERVER_PIDS=()
start_alert_servers() {
  MAILDIR=$TEST_DIR/mail REQDIR=$TEST_DIR/requests PLAN=$TEST_DIR/plan
  mkdir -p "$MAILDIR" "$REQDIR"
  : >"$PLAN"
  /usr/bin/python3 "$SRC/tests/e2e/alert_servers.py" smtp "$TEST_DIR/smtp.port" "$MAILDIR" &
  SERVER_PIDS+=($!)
  /usr/bin/python3 "$SRC/tests/e2e/alert_servers.py" http "$TEST_DIR/http.port" "$REQDIR" "$PLAN" &
  SERVER_PIDS+=($!)
  wait_for 20 "the SMTP server" test -s "$TEST_DIR/smtp.port"
  wait_for 20 "the HTTP server" test -s "$TEST_DIR/http.port"
  # shellcheck disable=SC2034  # read by the tests
  SMTP_PORT=$(cat "$TEST_DIR/smtp.port")
  # shellcheck disable=SC2034
  HTTP_PORT=$(cat "$TEST_DIR/http.port")
}
stop_alert_servers() {
  local p
  for p in "${SERVER_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${SERVER_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  SERVER_PIDS=()
}

# Real users are never root. run_as_user NAME: from here on the test's jobs run as
# NAME (made if missing, no special groups), who owns TEST_DIR; as_user COMMAND...
# runs one command as NAME with the cluster's environment.
TEST_USER=""
run_as_user() {
  TEST_USER=$1
  id "$TEST_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash "$TEST_USER"
  chown -R "$TEST_USER" "$TEST_DIR"
  # shellcheck disable=SC2034  # read by the tests
  TEST_UID=$(id -u "$TEST_USER")
}
as_user() {
  runuser -u "$TEST_USER" -- env SLURM_CONF="$SLURM_CONF" PYTHONPATH="$PYTHONPATH" PATH="$PATH" \
    TRAINCTL_LOG_DIR="$TRAINCTL_LOG_DIR" TRAINCTL_BAD_NODES="$TRAINCTL_BAD_NODES" "$@"
}
# submit_as_user ARGS...: submit, as TEST_USER.
submit_as_user() {
  local id
  id=$(as_user sbatch --parsable "$@") || fail "sbatch $* was refused for $TEST_USER"
  id=${id%%;*}
  echo "$id" >>"$TEST_DIR/.submitted"
  echo "$id"
}
# make_team_users: alice (the job's owner), bob (her teammate, group tcteam) and mallory
# (another user of the nodes, in no group of theirs), made if this machine lacks them.
make_team_users() {
  getent group tcteam >/dev/null || groupadd tcteam
  getent group alice >/dev/null || groupadd alice
  id alice >/dev/null 2>&1 || useradd -m -g alice -G tcteam -s /bin/bash alice
  id bob >/dev/null 2>&1 || useradd -m -g tcteam -s /bin/bash bob
  getent group mallory >/dev/null || groupadd mallory
  id mallory >/dev/null 2>&1 || useradd -m -g mallory -s /bin/bash mallory
  usermod -a -G tcteam alice
}
# The user's processes left on this machine (every node of the test cluster is here).
user_processes() { [ -z "${TEST_USER:-}" ] || pgrep -u "$TEST_USER" 2>/dev/null | tr '\n' ' ' || true; }
no_user_processes() { [ -z "$(user_processes)" ]; }
