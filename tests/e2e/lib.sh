# shellcheck shell=bash
# Sourced by the end-to-end tests: the local cluster, a scratch directory, bounded
# waits, and cleanup of every job the test submitted (by id) whatever happens.
set -euo pipefail

SRC=${TRAINCTL_SOURCE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${TRAINCTL_BUILD:-$SRC/build}
eval "$("$SRC/scripts/local-cluster" env)"
export SLURM_CONF
export PYTHONPATH=$BUILD/lib/python3/dist-packages
export TORCHRUN_SHIM=$SRC/tests/e2e/torchrun_shim.py
# shellcheck disable=SC2034  # used by the tests that source this file
TORCHRUN=(/usr/bin/python3 "$SRC/tests/e2e/torchrun_shim.py")
# shellcheck disable=SC2034
TRAIN=$SRC/slurm_templates/train_example.py
TEST_DIR=$(mktemp -d /tmp/trainctl-e2e-XXXXXX)
SUBMITTED=()

log() { printf '[%s] %s\n' "$(date +%T)" "$*"; }

cleanup() {
  local rc=$? j
  for j in "${SUBMITTED[@]}"; do scancel "$j" 2>/dev/null || true; done
  if [ "$rc" -ne 0 ]; then
    log "test failed; job output and events follow"
    for f in "$TEST_DIR"/*.out "$TEST_DIR"/events/*; do
      [ -f "$f" ] && { echo "--- $f"; tail -n 40 "$f"; }
    done
  fi
  # Wait (bounded) for the cancelled jobs to leave the nodes before the next test.
  for j in "${SUBMITTED[@]}"; do
    for _ in $(seq 1 60); do
      case "$(job_state "$j")" in PENDING | RUNNING | COMPLETING | CONFIGURING) sleep 0.5 ;; *) break ;; esac
    done
  done
  rm -rf "$TEST_DIR"
  exit "$rc"
}
trap cleanup EXIT

fail() {
  log "FAIL: $*"
  exit 1
}

# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND until it succeeds.
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
job_ended() { case "$(job_state "$1")" in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | PREEMPTED | OUT_OF_MEMORY | DEADLINE) return 0 ;; *) return 1 ;; esac; }

# submit ARGS...: sbatch --parsable, remembered for cleanup; prints the job id.
submit() {
  local id
  id=$(sbatch --parsable "$@") || fail "sbatch $* was refused"
  id=${id%%;*}
  SUBMITTED+=("$id")
  echo "$id"
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# events_count EVENT: how many lines of that event the ranks wrote so far.
events_count() { cat "$TEST_DIR"/events/rank*.jsonl 2>/dev/null | grep -c "\"event\": \"$1\"" || true; }
events_at_least() { [ "$(events_count "$1")" -ge "$2" ]; }
