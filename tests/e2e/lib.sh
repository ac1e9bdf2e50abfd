# shellcheck shell=bash
# Sourced by the end-to-end tests: what a test starts with (the local cluster's settings,
# a scratch directory, the launcher, its mode and variant), bounded waits, and cleanup of
# every job the test submitted (by id) whatever happens. The functions a test calls are
# in lib/, one file per concern: e2e_cluster (jobs, ports), e2e_events (what the ranks
# logged), e2e_jobs (job scripts and the launcher), e2e_alerts (mail and HTTP
# receivers), e2e_users (unprivileged users), e2e_wheel (the wheel).
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
# The functions, by what they do; nothing runs when they are sourced.
# shellcheck source=tests/e2e/lib/e2e_cluster.sh
source "$SRC/tests/e2e/lib/e2e_cluster.sh"
# shellcheck source=tests/e2e/lib/e2e_events.sh
source "$SRC/tests/e2e/lib/e2e_events.sh"
# shellcheck source=tests/e2e/lib/e2e_jobs.sh
source "$SRC/tests/e2e/lib/e2e_jobs.sh"
# shellcheck source=tests/e2e/lib/e2e_alerts.sh
source "$SRC/tests/e2e/lib/e2e_alerts.sh"
# shellcheck source=tests/e2e/lib/e2e_users.sh
source "$SRC/tests/e2e/lib/e2e_users.sh"
# shellcheck source=tests/e2e/lib/e2e_wheel.sh
source "$SRC/tests/e2e/lib/e2e_wheel.sh"
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
    for f in "$TEST_DIR"/*.out "$TEST_DIR"/events/* "$TEST_DIR"/events-*/* "$TEST_DIR"/logs/*/rank*.jsonl; do
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

# MODE: the first argument of a test that declares "# e2e-modes: run plugin" (e2e_jobs.sh).
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
TRAINCTL_CLUSTER_PLUGSTACK=$CLUSTER_ETC/plugstack.conf

# The cluster must run the proctrack variant this test was registered for.
if [ -n "${TRAINCTL_E2E_VARIANT:-}" ]; then
  running=$(cat "$CLUSTER_ETC/variant" 2>/dev/null || echo none)
  [ "$running" = "$TRAINCTL_E2E_VARIANT" ] || fail "the cluster runs $running, this test is for $TRAINCTL_E2E_VARIANT"
fi
SERVER_PIDS=()
TEST_USER=""
