#!/bin/bash
# One tick of a self-perpetuating cron chain, run by cron-hourly.slurm and
# cron-daily.slurm (see README.md here). It
#   1. leaves a heartbeat (trainwatch log-stall --path heartbeat-NAME checks the chain),
#   2. queues the next tick (--begin=now+PERIOD); a tick that finds another tick of its
#      chain queued is a duplicate submission and ends at once, so submitting the chain
#      twice still leaves one chain; a failed resubmission raises an alert through
#      trainwatch instead of ending the chain silently,
#   3. submits every *.slurm in the chain's folder, each as a singleton so a slow job
#      never overlaps itself (an empty folder submits nothing),
#   4. removes tick and job outputs older than CRON_KEEP_DAYS (7).
# Usage: cron-chain.sh NAME PERIOD FOLDER   (PERIOD as sbatch --begin takes it: 1hour)
set -euo pipefail
shopt -s nullglob

name=$1 period=$2 folder=$3
cron_dir=$(cd "$(dirname "$folder")" && pwd)
logs=$cron_dir/logs
config=${TRAINWATCH_CONFIG:-$cron_dir/trainwatch.conf}
mkdir -p "$logs"
export CRON_DIR=$cron_dir  # the jobs it submits find trainwatch.conf through it
say() { echo "cron-chain[$name]: $*"; }

alert() {  # alert STATUS TEXT: through trainwatch, deduplicated and spooled
  local args=()
  [ -f "$config" ] && args=(--config "$config")
  trainwatch "${args[@]}" notify --check cron-chain --target "$name" --status "$1" --text "$2" || true
}

# A tick of this chain is already queued: this submission is a second chain. It ends
# here, doing nothing, and the chain goes on as one.
me=${SLURM_JOB_ID:-none}
queued=$(squeue -h -u "$(id -un)" -n "${SLURM_JOB_NAME:-$name}" -t PENDING -o %i 2>/dev/null | grep -vx "$me" || true)
if [ -n "$queued" ]; then
  say "a tick of this chain is already queued (job $(echo "$queued" | tr '\n' ' ')); this one is a duplicate and ends"
  exit 0
fi

# 1. heartbeat
date +%s >"$cron_dir/heartbeat-$name"

# 2. the next tick
script=$(scontrol show job -o "$me" 2>/dev/null | grep -o 'Command=[^ ]*' | cut -d= -f2 || true)
[ -n "$script" ] && [ -f "$script" ] || script=${CRON_SCRIPT:-}
if [ -z "$script" ]; then
  alert critical "cannot tell which script to resubmit (run it with sbatch, or set CRON_SCRIPT)"
  exit 1
elif out=$(sbatch --parsable --job-name="${SLURM_JOB_NAME:-$name}" --begin="now+$period" --dependency=singleton \
  --output="$logs/%x-%j.out" "$script" 2>&1); then
  say "next tick queued as job ${out%%;*}, begins in $period"
  alert ok "the chain queued its next tick (job ${out%%;*})"
else
  say "could not queue the next tick: $out"
  alert critical "the cron chain could not queue its next tick: $out"
  exit 1
fi

# 3. the jobs in the folder
n=0
for job in "$folder"/*.slurm; do
  base=$(basename "$job" .slurm)
  if out=$(sbatch --parsable --job-name="cron-$base" --dependency=singleton --output="$logs/%x-%j.out" "$job" 2>&1); then
    say "submitted $base as job ${out%%;*}"
    n=$((n + 1))
  else
    say "could not submit $base: $out"
    alert critical "the cron chain could not submit $job: $out"
  fi
done
say "$n job(s) submitted from $folder"

# 4. old outputs
find "$logs" -name '*.out' -type f -mtime +"${CRON_KEEP_DAYS:-7}" -delete 2>/dev/null || true
