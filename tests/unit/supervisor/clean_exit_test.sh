#!/usr/bin/env bash
# A command that leaves nothing behind gets no "left N processes behind" line: the
# supervisor's own helpers (the log directory's check, started beside the command; the
# crash-evidence writer, started at every rank's end) are not the command's. Before the
# fixes, about 3 runs in 100 of `trainctl-run -- true` said so, and 4 in 13 of a loop.
# Then a clean step leaves no crash evidence in the log directory: two supervisors as the
# two nodes of one step, each marks its judgement done, and the last removes the directory.
# Usage: clean_exit_test.sh TRAINCTL_RUN [RUNS] [PYTHONPATH with the trainctl package]
set -euo pipefail
run=$1
runs=${2:-200}
pkg=${3:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
said=0
check_run() {  # check_run WHAT COMMAND...: one run, counted when it says "behind"
  local what=$1
  shift
  "$run" -- "$@" 2>"$work/err" || { echo "FAIL: $what exited non-zero: $(cat "$work/err")"; exit 1; }
  if grep -q 'behind' "$work/err"; then
    said=$((said + 1))
    grep 'behind' "$work/err"
  fi
}
for _ in $(seq 1 "$runs"); do check_run "trainctl-run -- true" true; done
echo "clean exits of true that said something was left behind: $said of $runs"
[ "$said" -eq 0 ] || { echo "FAIL"; exit 1; }
if [ -z "$pkg" ]; then
  echo "the loop part is not run: no Python package given (a sanitized build: Python cannot load its library)"
  exit 0
fi

# A loop that uses trainctl (its rank takes a heartbeat slot, so its end is a rank's
# death the supervisor writes down for a step of 2 nodes), as the first node of a step.
loop='import trainctl
with trainctl.Controller(signals="none") as c:
    for s in range(3):
        c.check(s)'
export PYTHONPATH=$pkg SLURM_JOB_ID=4242 SLURM_STEP_NUM_NODES=2 SLURM_SUBMIT_DIR=$work/logs \
  TRAINCTL_SHM_DIR=$work/shm XDG_RUNTIME_DIR=
mkdir -p "$work/logs"
loops=50
for i in $(seq 1 $loops); do SLURM_STEP_ID=$i SLURMD_NODENAME=n1 check_run "the loop" python3 -c "$loop"; done
echo "clean exits of a loop that said something was left behind: $said of $loops"
[ "$said" -eq 0 ] || { echo "FAIL"; exit 1; }
# Each step still waits for its second node: n1's judgement, n1's first death when its
# supervisor saw the rank before it ended (a loop of 3 steps may end first), and n1's sign
# of life when its log directory's check had answered by then, nothing else.
# The evidence is under the user's own directory in the log directory, trainctl-<user>.
ev=$work/logs/trainctl-$(id -un)
dirs=$(find "$ev" -maxdepth 1 -name 'crash-*' | wc -l)
[ "$dirs" -eq $loops ] || { echo "FAIL: $dirs evidence directories for $loops steps"; exit 1; }
seen=0
for d in "$ev"/crash-*; do
  case "$(find "$d" -mindepth 1 -printf '%f\n' | sort | tr '\n' ' ')" in
    "n1 n1.done " | "n1 n1.alive n1.done ") seen=$((seen + 1)) ;;
    "n1.done " | "n1.alive n1.done ") ;;
    *) echo "FAIL: $d holds $(ls "$d")"; exit 1 ;;
  esac
done
echo "steps whose rank's end the supervisor saw: $seen of $loops"
# The second node of step 7 ends cleanly too: the step's evidence is gone.
SLURM_STEP_ID=7 SLURMD_NODENAME=n2 check_run "the loop on n2" python3 -c "$loop"
[ ! -e "$ev/crash-4242.0.7" ] || { echo "FAIL: step 7 left $(ls -a "$ev/crash-4242.0.7")"; exit 1; }
echo "a clean step of 2 nodes left no crash evidence behind"
