#!/usr/bin/env bash
# trainwatch figures (printed, not asserted): one fs run over 10 paths against df -P
# and du -s over the same paths, and one job-running run against a bare squeue.
# Needs a release build; the job-running part needs the local cluster.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
tw=$PWD/build/bin/trainwatch
work=$(mktemp -d /tmp/trainctl-bench-tw-XXXXXX)
trap 'rm -rf "$work"' EXIT
paths=()
for i in $(seq 1 10); do
  mkdir -p "$work/d$i"
  for j in $(seq 1 20); do mkdir -p "$work/d$i/s$j" && touch "$work/d$i/s$j/f"{1..50}; done  # 1,000 files each
  paths+=("$work/d$i")
done
fs_args=()
for p in "${paths[@]}"; do fs_args+=(--path "$p" --min-free 1G --min-free-inodes 5%); done
hyperfine -N -w 3 -r 20 --export-json "$work/h.json" \
  "$tw fs ${fs_args[*]} --state-dir $work/state" "df -P ${paths[*]}" "du -s ${paths[*]}" >/dev/null 2>&1
python3 - "$work/h.json" <<'PY'
import json, sys
names = ["trainwatch fs, 10 paths", "df -P, 10 paths", "du -s, 10 paths (10,000 files)"]
for name, r in zip(names, json.load(open(sys.argv[1]))["results"]):
    print("%-34s %7.1f ms mean, %7.1f ms median" % (name, r["mean"] * 1e3, r["median"] * 1e3))
PY
if eval "$(scripts/local-cluster env)" && SLURM_CONF=$SLURM_CONF scontrol ping >/dev/null 2>&1; then
  export SLURM_CONF
  hyperfine -N -i -w 2 -r 20 --export-json "$work/j.json" \
    "$tw job-running --job-name train --state-dir $work/state" "squeue -h -n train" >/dev/null 2>&1 || true
  python3 - "$work/j.json" <<'PY'
import json, sys
for name, r in zip(["trainwatch job-running", "squeue -h -n train"], json.load(open(sys.argv[1]))["results"]):
    print("%-34s %7.1f ms mean, %7.1f ms median" % (name, r["mean"] * 1e3, r["median"] * 1e3))
PY
fi
