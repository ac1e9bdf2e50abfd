#!/usr/bin/env bash
# Cluster benchmarks for the supervisor and the plugin; prints figures, asserts nothing.
#   notice latency: scancel --signal -> the last of 3 ranks (one per node) sees it,
#     through the signal, and through the node state alone (ranks catch no signal)
#   deadline precision: the moment ranks see a deadline against the deadline
#   srun -N3 true: without the plugin, with it loaded but unused, with it active
#   supervisor RSS (VmHWM) during a run
# Needs a release build and the local cluster (scripts/local-cluster up).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
src=$PWD
eval "$(scripts/local-cluster env)"
export SLURM_CONF PYTHONPATH=$src/build/lib/python3/dist-packages
run=$src/build/bin/trainctl-run
work=$(mktemp -d /tmp/trainctl-bench-XXXXXX)
plugstack=$(dirname "$SLURM_CONF")/plugstack.conf
cp "$plugstack" "$work/plugstack.saved"
cleanup() {
  cp "$work/plugstack.saved" "$plugstack"
  scancel -u "$(id -un)" --name=trainctl-bench 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

wait_files() {  # wait_files PATTERN N SECONDS
  local end=$((SECONDS + $3))
  until [ "$(find "$work" -name "$1" | wc -l)" -ge "$2" ]; do
    [ "$SECONDS" -lt "$end" ] || { echo "bench: timed out waiting for $2 $1" >&2; exit 1; }
    sleep 0.05
  done
}

# notice RUNS SIGNALS: the latency of scancel --signal=USR1, median over RUNS jobs.
notice() {
  local runs=$1 signals=$2 i lat=()
  for i in $(seq 1 "$runs"); do
    rm -f "$work"/*.ready "$work"/*.seen
    TRAINCTL_SIGNALS=$signals sbatch -J trainctl-bench -N3 --ntasks-per-node=1 -o /dev/null \
      --wrap "srun $run --kill-switch=$work/KILL -- python3 $src/tests/bench/notice_rank.py $work 60" >"$work/job"
    wait_files '*.ready' 3 60
    sleep 0.5
    if [ "$i" = 1 ] && [ "$signals" != none ]; then
      for p in $(pgrep -x trainctl-run); do
        grep VmHWM "/proc/$p/status" | awk '{print $2}'
      done | sort -n | tail -1 >"$work/rss"
    fi
    local t0
    t0=$(date +%s.%N)
    scancel --signal=USR1 "$(grep -o '[0-9]*' "$work/job")"
    wait_files '*.seen' 3 30
    lat+=("$(cat "$work"/*.seen | awk -v t0="$t0" '{ d = $1 - t0; if (d > m) m = d } END { printf "%.1f", m * 1000 }')")
    sleep 1
  done
  printf '%s\n' "${lat[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "median %s ms, max %s ms over %d runs", a[int((NR + 1) / 2)], a[NR], NR }'
}

variant=$(cat "$(dirname "$SLURM_CONF")/variant")
echo "== notice latency, 3 nodes, proctrack/$variant (scancel --signal=USR1 -> last rank sees it)"
echo "through the signal:          $(notice 5 USR1,TERM)"
echo "through the node state only: $(notice 5 none)"
echo "supervisor peak RSS (VmHWM): $(cat "$work/rss") kB"

echo "== deadline precision (trainctl-run --deadline, 3 nodes)"
rm -f "$work"/*.ready "$work"/*.seen
deadline=$(python3 -c 'import time; print(int(time.time()) + 12)')
sbatch -J trainctl-bench -N3 --ntasks-per-node=1 -o /dev/null \
  --wrap "srun $run --deadline=$deadline -- python3 $src/tests/bench/notice_rank.py $work 60" >/dev/null
wait_files '*.seen' 3 60
cat "$work"/*.seen | awk -v d="$deadline" '{ x = $1 - d; if (x < lo || NR == 1) lo = x; if (x > hi || NR == 1) hi = x }
  END { printf "ranks saw the deadline %+.3f s to %+.3f s from it (reason %s)\n", lo, hi, $2 }'

echo "== srun -N3 true (hyperfine, 40 runs each)"
bench_srun() {
  hyperfine -N -w 3 -r 40 --export-json "$work/h.json" "$@" >/dev/null 2>&1
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("%.1f ms mean, %.1f ms median" % (r["mean"]*1e3, r["median"]*1e3))' "$work/h.json"
}
echo "# no trainctl plugin" >"$plugstack"
base=$(bench_srun "srun -N3 true")
echo "without the plugin:          $base"
cp "$work/plugstack.saved" "$plugstack"
loaded=$(bench_srun "srun -N3 true")
echo "plugin loaded, not used:     $loaded"
active=$(bench_srun "srun -N3 --kill-switch=$work/KILL true")
echo "plugin active (supervised):  $active"
python3 - "$base" "$loaded" "$active" <<'PY'
import sys
b, l, a = (float(x.split()[0]) for x in sys.argv[1:])
print("ratio of means: loaded/without %.3f, active/without %.3f" % (l / b, a / b))
PY
