#!/usr/bin/env bash
# trainctl status: what it takes and what it costs the ranks; prints figures, asserts nothing.
#   wall time of `trainctl status JOB` on a 3-node job (6 ranks, torchrun 2 per node)
#   the ranks' wall time per step with and without a `trainctl status --watch` running,
#     in alternating 30 s phases (steps counted from the node state at each phase's ends)
# Needs a release build and the local cluster (scripts/local-cluster up). ROUNDS=2.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
src=$PWD
eval "$(scripts/local-cluster env)"
export SLURM_CONF PYTHONPATH=$src/build/lib/python3/dist-packages
bin=$src/build/bin
work=$(mktemp -d /tmp/trainctl-bench-XXXXXX)
watch_pid=""
cleanup() {
  [ -z "$watch_pid" ] || kill -INT "$watch_pid" 2>/dev/null || true
  scancel -u "$(id -un)" --name=trainctl-bench-status 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/job.sh" <<JOB
#!/bin/bash
srun --ntasks-per-node=1 bash -c 'exec $bin/trainctl-run --kill-switch=$work/KILL -- /usr/bin/python3 \
  $src/tests/e2e/torchrun_shim.py --nnodes=\$SLURM_NNODES --nproc_per_node=2 --rdzv_backend=static \
  --master_addr=127.0.0.1 --master_port=$port --node_rank=\$SLURM_NODEID \
  $src/slurm_templates/train_example.py --ckpt-dir $work/ckpt --steps 10000000 --step-time 0.05 --ddp'
JOB
# The job's own files (crash records, stacks) stay in the scratch directory.
export TRAINCTL_LOG_DIR=$work/logs
job=$(sbatch --parsable -J trainctl-bench-status -N3 --time=15 -D "$work" -o "$work/job.out" "$work/job.sh")
rank0_step() { "$bin/trainctl" status --json "$job" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ranks"][0]["step"] or 0)'; }
ranks() { "$bin/trainctl" status --json "$job" 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["ranks"]))' 2>/dev/null || echo 0; }
end=$((SECONDS + 180))
until [ "$(ranks)" -ge 6 ] && [ "$(rank0_step)" -gt 20 ]; do
  [ "$SECONDS" -lt "$end" ] || { echo "bench: the 6 ranks did not start" >&2; tail "$work/job.out" >&2; exit 1; }
  sleep 1
done

times=()
for _ in $(seq 1 10); do
  t0=$(date +%s%N)
  "$bin/trainctl" status "$job" >/dev/null
  times+=($((($(date +%s%N) - t0) / 1000)))
done
printf '%s\n' "${times[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "trainctl status, 3 nodes / 6 ranks: median %.1f ms, min %.1f, max %.1f (10 runs)\n", a[int((NR + 1) / 2)] / 1000, a[1] / 1000, a[NR] / 1000 }'

# phase SECONDS: the ranks' mean wall time per step over that long (rank 0's steps).
phase() {
  local s0 s1 t0 t1
  s0=$(rank0_step) t0=$(date +%s%N)
  sleep "$1"
  s1=$(rank0_step) t1=$(date +%s%N)
  awk -v ds=$((s1 - s0)) -v dt=$((t1 - t0)) 'BEGIN { printf "%.2f", dt / 1e6 / ds }'
}
for round in $(seq 1 "${ROUNDS:-2}"); do
  quiet=$(phase 30)
  "$bin/trainctl" status --watch "$job" >/dev/null 2>&1 &
  watch_pid=$!
  sleep 2
  watched=$(phase 30)
  kill -INT "$watch_pid"
  wait "$watch_pid" || true
  watch_pid=""
  echo "round $round: ms per step without status / with status --watch running: $quiet / $watched"
done
touch "$work/KILL"
end=$((SECONDS + 60))
while squeue -h -j "$job" 2>/dev/null | grep -q . && [ "$SECONDS" -lt "$end" ]; do sleep 1; done
