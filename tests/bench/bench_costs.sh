#!/usr/bin/env bash
# What trainctl costs where nobody looks (issue "Free at launch, quiet at scale"): prints
# figures, asserts nothing. With BEFORE=<another build dir> every figure is taken for that
# build too, interleaved with this one in the same run (repetitions alternate), so that a
# change is measured against its parent on the same noisy machine.
#   launch     srun -N1 true: no plugin / the kill switch / the template's options
#              (medians and minimums of 3 rounds)
#   busy node  trainctl-run -- true with 5,000 idle processes on the node: time,
#              instructions (callgrind), syscalls (strace -c)
#   rpcs       a 3-node job of RPC_MINUTES (10) minutes at the default EndTime poll:
#              slurmctld's count (sdiag) per message type, per node-hour
#   follower   wakeups and CPU of the supervisor that does not publish, over
#              FOLLOWER_SECONDS (180)
#   takeover   both supervisors of a node stopped (SIGSTOP), at the default poll
#              interval: seconds until a save-switch touch made 1 s after the stop is
#              saved (a rank must take over publishing first)
#   trainwatch instructions of `trainwatch fs` over 10 paths at 0, 100 and 500 history
#              points, and of --version, against squeue
#   bad nodes  `trainctl bad-nodes` over 10,000 findings, and after the next append
# Needs release builds and the local cluster (scripts/local-cluster up); in a release's
# root: scripts/testbed shell RELEASE sh -c '/src/scripts/local-cluster up &&
# PARTS=launch bash /src/tests/bench/bench_costs.sh'. PARTS picks parts
# (default: all of "launch busy follower takeover trainwatch badnodes rpcs").
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
src=$PWD
eval "$(scripts/local-cluster env)"
export SLURM_CONF
this=${TRAINCTL_BUILD:-$src/build}  # scripts/testbed sets it in a release's root
builds=("$this")
[ -n "${BEFORE:-}" ] && builds=("$(cd "$BEFORE" && pwd)" "${builds[@]}")
parts=${PARTS:-launch busy follower takeover trainwatch badnodes rpcs}
work=$(mktemp -d /tmp/trainctl-bench-costs-XXXXXX)
chmod 755 "$work"
plugstack=$(dirname "$SLURM_CONF")/plugstack.conf
cp "$plugstack" "$work/plugstack.saved"
sleepers=()
cleanup() {
  cp "$work/plugstack.saved" "$plugstack"
  scancel --name=trainctl-bench-costs 2>/dev/null || true
  [ ${#sleepers[@]} -eq 0 ] || kill "${sleepers[@]}" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
name() { [ "$1" = "$this" ] && echo "this build" || echo "BEFORE ($1)"; }
plugin_for() { echo "optional $1/spank_plugin/trainctl_spank.so supervisor=$1/bin/trainctl-run"; }
median_min() { sort -n | awk '{ a[NR] = $1 } END { printf "median %.1f ms, min %.1f ms", a[int((NR + 1) / 2)], a[1] }'; }
instructions() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null | awk '/Collected/ { n = $4 } END { print n }'; }
syscalls() { strace -c -o "$work/strace" "$@" >/dev/null 2>&1; awk '$NF == "total" { print $4 }' "$work/strace"; }
ms_of() {  # ms_of RUNS COMMAND...: one wall time in ms per run, one per line
  local i t0
  for i in $(seq 1 "$1"); do
    t0=$(date +%s%N)
    "${@:2}" >/dev/null 2>&1
    echo $((($(date +%s%N) - t0) / 1000))
  done | awk '{ printf "%.2f\n", $1 / 1000 }'
}

if [[ " $parts " == *" launch "* ]]; then
  # Two ways to use the plugin: the kill switch alone, and every option the template's
  # #SBATCH line sets (a deadline, both switches, the hang timeout).
  template=(-t 20 --graceful-exit=10 --kill-switch="$work/KILL" --save-switch="$work/SAVE" --hang-timeout=8m)
  echo "== srun -N1 true, 3 rounds x 20 runs, the variants alternating"
  for _ in 1 2 3; do
    echo "# no trainctl plugin" >"$plugstack"
    ms_of 20 srun -N1 true >>"$work/launch.none"
    for b in "${builds[@]}"; do
      plugin_for "$b" >"$plugstack"
      ms_of 20 srun -N1 --kill-switch="$work/KILL" true >>"$work/launch.$(basename "$(dirname "$b")").kill"
      ms_of 20 srun -N1 "${template[@]}" true >>"$work/launch.$(basename "$(dirname "$b")").template"
    done
  done
  cp "$work/plugstack.saved" "$plugstack"
  none=$(median_min <"$work/launch.none")
  echo "no plugin:                 $none"
  for b in "${builds[@]}"; do
    for v in kill template; do
      f=$work/launch.$(basename "$(dirname "$b")").$v
      what=$([ "$v" = kill ] && echo "--kill-switch" || echo "the template's options (${template[*]:2})")
      echo "plugin active, $(name "$b"), $what: $(median_min <"$f")  ratio of medians $(python3 -c '
import statistics, sys
a = [float(x) for x in open(sys.argv[1])]; n = [float(x) for x in open(sys.argv[2])]
print("%.3f" % (statistics.median(a) / statistics.median(n)))' "$f" "$work/launch.none")"
    done
  done
fi

if [[ " $parts " == *" busy "* ]]; then
  echo "== trainctl-run -- true on a node with 5,000 more idle processes"
  for b in "${builds[@]}"; do
    echo "$(name "$b"), quiet node: $(ms_of 15 "$b/bin/trainctl-run" -- true | median_min), $(instructions "$b/bin/trainctl-run" -- true) instructions, $(syscalls "$b/bin/trainctl-run" -- true) syscalls"
  done
  for i in $(seq 1 5000); do
    sleep 3600 &
    sleepers+=($!)
  done
  for b in "${builds[@]}"; do
    echo "$(name "$b"), 5,000 idle processes: $(ms_of 15 "$b/bin/trainctl-run" -- true | median_min), $(instructions "$b/bin/trainctl-run" -- true) instructions, $(syscalls "$b/bin/trainctl-run" -- true) syscalls"
  done
  kill "${sleepers[@]}" 2>/dev/null || true
  wait "${sleepers[@]}" 2>/dev/null || true
  sleepers=()
fi

if [[ " $parts " == *" takeover "* ]]; then
  echo "== both supervisors of a node stopped, default poll interval (10 s): 3 runs"
  for b in "${builds[@]}"; do
    echo "# no trainctl plugin" >"$plugstack"
    for run in 1 2 3; do
      rm -rf "$work/tk" && mkdir -p "$work/tk/events" && chmod -R 777 "$work/tk"
      job=$(PYTHONPATH=$b/lib/python3/dist-packages sbatch --parsable -J trainctl-bench-costs -N1 -n2 -t 5 \
        -o "$work/tk/job.out" --wrap "srun $b/bin/trainctl-run --kill-switch=$work/tk/KILL --save-switch=$work/tk/SAVE -- \
/usr/bin/python3 $src/slurm_templates/train_example.py --ckpt-dir $work/tk/ckpt --step-time 0.05 \
--events $work/tk/events/rank{rank}.jsonl")
      supervisors() {
        local p
        for p in $(pgrep -x trainctl-run); do
          [ "$(readlink "/proc/$p/exe")" = "$b/bin/trainctl-run" ] && echo "$p"
        done
      }
      for _ in $(seq 1 600); do
        [ "$(cat "$work"/tk/events/rank*.jsonl 2>/dev/null | grep -c '"start"')" -ge 2 ] && break
        sleep 0.2
      done
      sleep 2
      pids=$(supervisors | tr '\n' ' ')
      if [ -z "$pids" ]; then
        echo "$(name "$b"): run $run: the job did not start its ranks: $(tail -3 "$work/tk/job.out")"
        scancel "$job"
        continue
      fi
      # shellcheck disable=SC2086  # two pids
      kill -STOP $pids
      stopped=$(date +%s.%N)
      sleep 1
      touch "$work/tk/SAVE"
      for _ in $(seq 1 600); do
        grep -q '"save-switch"' "$work"/tk/events/rank*.jsonl 2>/dev/null && break
        sleep 0.1
      done
      saved=$(grep -h '"save-switch"' "$work"/tk/events/rank*.jsonl | head -1 |
        python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["time"])' 2>/dev/null || echo "")
      # shellcheck disable=SC2086
      kill -CONT $pids
      if [ -n "$saved" ]; then
        python3 -c 'import sys; print("%s: run %s: the touch saved %.1f s after the supervisors stopped" % (sys.argv[1], sys.argv[2], float(sys.argv[3]) - float(sys.argv[4])))' \
          "$(name "$b")" "$run" "$saved" "$stopped"
      else
        echo "$(name "$b"): run $run: no save within 60 s of the stop"
      fi
      touch "$work/tk/KILL"
      for _ in $(seq 1 100); do squeue -h -j "$job" | grep -q . || break; sleep 0.3; done
      scancel "$job" 2>/dev/null || true
    done
  done
  cp "$work/plugstack.saved" "$plugstack"
fi

if [[ " $parts " == *" follower "* ]]; then
  secs=${FOLLOWER_SECONDS:-180}
  echo "== an idle follower (a second supervisor on the node) over $secs s"
  for b in "${builds[@]}"; do
    echo "# no trainctl plugin" >"$plugstack"
    job=$(sbatch --parsable -J trainctl-bench-costs -N1 -n2 -o /dev/null \
      --wrap "srun $b/bin/trainctl-run --kill-switch=$work/KILL -- sleep $((secs + 30))")
    supervisors() {  # the two supervisors of that job: trainctl-run processes of this build
      local p
      for p in $(pgrep -x trainctl-run); do
        [ "$(readlink "/proc/$p/exe")" = "$b/bin/trainctl-run" ] && echo "$p"
      done
    }
    for _ in $(seq 1 100); do [ "$(supervisors | wc -l)" -ge 2 ] && break; sleep 0.2; done
    sleep 3
    pids=$(supervisors | tr '\n' ' ')
    [ -n "$pids" ] || { echo "$(name "$b"): no supervisor found"; scancel "$job"; continue; }
    declare -A before_cs before_cpu
    for p in $pids; do
      before_cs[$p]=$(awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$p/status")
      before_cpu[$p]=$(awk '{ print $1 }' "/proc/$p/schedstat")  # ns on a CPU
    done
    sleep "$secs"
    for p in $pids; do
      cs=$(($(awk '/^voluntary_ctxt_switches/ { print $2 }' "/proc/$p/status") - before_cs[$p]))
      cpu=$(($(awk '{ print $1 }' "/proc/$p/schedstat") - before_cpu[$p]))
      echo "$cs $cpu"
    done | sort -n | head -1 | awk -v n="$(name "$b")" -v s="$secs" \
      '{ printf "%s: the follower woke %d times in %d s (%.0f an hour), %.3f s CPU an hour\n", n, $1, s, $1 * 3600 / s, $2 / 1e9 * 3600 / s }'
    scancel "$job"
    unset before_cs before_cpu
    sleep 2
  done
  cp "$work/plugstack.saved" "$plugstack"
fi

if [[ " $parts " == *" trainwatch "* ]]; then
  echo "== trainwatch: instructions (callgrind), a clean fs check over 10 paths at 0, 100 and 500 history points, and --version"
  args=()
  for i in $(seq 1 10); do mkdir -p "$work/d$i" && args+=(--path "$work/d$i" --min-free 1M --min-free-inodes 1%); done
  # Each build keeps its own state directory (the history formats differ); the runs
  # between two measurements add one point per path each, as a cron run would.
  n=0
  for b in "${builds[@]}"; do n=$((n + 1)) && mkdir -p "$work/tw-state-$n"; done
  have=0
  for points in 0 100 500; do
    n=0
    for b in "${builds[@]}"; do
      n=$((n + 1))
      for _ in $(seq $((have + 1)) "$points"); do "$b/bin/trainwatch" fs "${args[@]}" --state-dir "$work/tw-state-$n" >/dev/null; done
      echo "$(name "$b"): fs with $points history points $(instructions "$b/bin/trainwatch" fs "${args[@]}" --state-dir "$work/tw-state-$n")"
    done
    have=$((points + 1))
  done
  for b in "${builds[@]}"; do
    echo "$(name "$b"): --version $(instructions "$b/bin/trainwatch" --version), libraries loaded: $(ldd "$b/bin/trainwatch" | wc -l)"
  done
  echo "squeue -h (for scale): $(instructions squeue -h)"
fi

if [[ " $parts " == *" badnodes "* ]]; then
  echo "== the bad-node memory with 10,000 findings"
  for b in "${builds[@]}"; do
    export TRAINCTL_BAD_NODES=$work/bad_nodes.$RANDOM
    python3 -c 'import sys, time
now = int(time.time())
with open(sys.argv[1], "w") as f:
    for i in range(10000):
        f.write("%d n%d job=%d gpus=- reason=crashed (SIGSEGV, first death of the job)\n" % (now - 40 * 86400 + i * 300, i % 3 + 1, i))' "$TRAINCTL_BAD_NODES"
    # trainctl bad-nodes; a build from before the verb: trainctl-run's old flags.
    list=("$b/bin/trainctl" bad-nodes) mark=("$b/bin/trainctl" bad-nodes mark n1 bench)
    if ! "$b/bin/trainctl" bad-nodes --help >/dev/null 2>&1; then
      list=("$b/bin/trainctl-run" --bad-nodes) mark=("$b/bin/trainctl-run" --mark-bad-node bench)
    fi
    first=$(ms_of 9 "${list[@]}" | median_min)
    SLURMD_NODENAME=n1 "${mark[@]}" >/dev/null 2>&1
    echo "$(name "$b"): bad-nodes over 10,000 lines $first; after the next mark the file has $(wc -l <"$TRAINCTL_BAD_NODES") lines and bad-nodes takes $(ms_of 9 "${list[@]}" | median_min)"
    unset TRAINCTL_BAD_NODES
  done
fi

if [[ " $parts " == *" rpcs "* ]]; then
  minutes=${RPC_MINUTES:-10}
  echo "== controller RPCs: a 3-node job of $minutes min, default EndTime poll (5 min), graceful exit 5 min"
  for b in "${builds[@]}"; do
    echo "# no trainctl plugin" >"$plugstack"
    sdiag -r >/dev/null
    job=$(sbatch --parsable -J trainctl-bench-costs -N3 --time=$((minutes + 30)) -o "$work/rpc.out" \
      --wrap "srun $b/bin/trainctl-run --graceful-exit=5m -- sleep $((minutes * 60))")
    sleep $((minutes * 60 + 20))  # nothing else asks about jobs meanwhile
    sdiag | awk -v n="$(name "$b")" -v m="$minutes" '
      $1 ~ /^REQUEST_(JOB_INFO_SINGLE|FED_INFO)$/ { for (i = 2; i <= NF; i++) if ($i ~ /^count:/) { sub("count:", "", $i); c[$1] = $i } }
      END { t = c["REQUEST_JOB_INFO_SINGLE"] + c["REQUEST_FED_INFO"];
            printf "%s: JOB_INFO_SINGLE %d, FED_INFO %d: %.1f RPCs per node-hour\n", n, c["REQUEST_JOB_INFO_SINGLE"], c["REQUEST_FED_INFO"], t / 3 / (m / 60) }'
    scancel "$job" 2>/dev/null || true
  done
  cp "$work/plugstack.saved" "$plugstack"
fi
