#!/usr/bin/env bash
# e2e-alone: it counts the RPCs slurmctld receives from everyone
# What the supervisors cost the controller, counted by slurmctld itself (sdiag): two
# 3-node jobs side by side, one with trainctl-run in each task (on the cluster's
# slurm.conf without the plugin) and one under the plugin, each with a 10 s EndTime
# poll. Each EndTime read is one RPC (REQUEST_JOB_INFO_SINGLE, no REQUEST_FED_INFO), no
# two nodes of a job read in the same second, a user's `scancel --signal=USR1` costs no
# read, and the batch script's end asks nothing; the plugin's batch script costs one read
# for the run id (its submit time), the run-mode job's batch script (not under trainctl)
# none. Nothing else may ask the controller
# about jobs while it counts: the test waits on the jobs' output files, not on scontrol.
# Both modes at once: the count is the same sum, in half the time this test runs alone.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

for mode in run plugin; do
  cat >"$TEST_DIR/job-$mode.sh" <<JOB
#!/bin/bash
export TRAINCTL_LOG_QUERIES=1
if [ "$mode" = run ]; then
  srun $BUILD/bin/trainctl-run --graceful-exit=1m --endtime-poll=10s -- sleep 30
else
  srun sleep 30
fi
echo "batch script done"
JOB
done
rpc_count() {  # rpc_count TYPE: slurmctld's count of that message type since the reset
  sdiag | awk -v t="$1" '$1 == t { for (i = 2; i <= NF; i++) if ($i ~ /^count:/) { sub("count:", "", $i); print $i; exit } }' |
    grep . || echo 0
}
batches_done() { grep -q "batch script done" "$TEST_DIR/job-run.out" 2>/dev/null && grep -q "batch script done" "$TEST_DIR/job-plugin.out" 2>/dev/null; }

sdiag -r >/dev/null || fail "sdiag -r failed"
export TRAINCTL_LOG_QUERIES=1
run_job=$(SLURM_CONF=$CLUSTER_ETC/without-plugin/slurm.conf submit -N3 --ntasks-per-node=1 --time=10 \
  -o "$TEST_DIR/job-run.out" "$TEST_DIR/job-run.sh")
plugin_job=$(submit -N3 --ntasks-per-node=1 --time=10 --graceful-exit=1 -o "$TEST_DIR/job-plugin.out" "$TEST_DIR/job-plugin.sh")
log "submitted 3-node jobs $run_job (trainctl-run) and $plugin_job (plugin)"
sleep 15
log "scancel --signal=USR1 $run_job $plugin_job (a user's notice: no EndTime read)"
# scancel itself asks the controller (a federation lookup and a job list): counted
# around it, and not held against the supervisors.
fed_before=$(rpc_count REQUEST_FED_INFO)
scancel --signal=USR1 "$run_job" "$plugin_job"
scancel_fed=$(($(rpc_count REQUEST_FED_INFO) - fed_before))
wait_for 120 "both batch scripts to end" batches_done
# Every supervisor of the two jobs gone before slurmctld's count is read: one still running
# could ask once more after it. Found by their job id, on this host's cluster (the
# releases' roots run their own clusters beside it). The jobs' end is waited for after
# the count: scontrol's own queries would be counted.
no_supervisor() {
  local pid
  for pid in $(pgrep -x trainctl-run); do
    [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = / ] || continue
    grep -qxE "SLURM_JOB_ID=($run_job|$plugin_job)" < <(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null) && return 1
  done
  return 0
}
wait_for 60 "the jobs' supervisors to end" no_supervisor
single=$(rpc_count REQUEST_JOB_INFO_SINGLE)
fed=$(($(rpc_count REQUEST_FED_INFO) - scancel_fed))
all_info=$(rpc_count REQUEST_JOB_INFO)
for job in "$run_job" "$plugin_job"; do
  wait_for 60 "job $job to end" job_ended "$job"
  [ "$(job_state "$job")" = COMPLETED ] || fail "job $job ended $(job_state "$job")"
done

reads=0
for mode in run plugin; do
  out=$TEST_DIR/job-$mode.out
  grep -o 'trainctl-run\[[^]]*\]: asked the controller.*' "$out" >"$TEST_DIR/queries-$mode" || true
  n=$(wc -l <"$TEST_DIR/queries-$mode")
  reads=$((reads + n))
  log "$mode: controller reads logged: $n"
  sed 's/^/  /' "$TEST_DIR/queries-$mode"
  ids=$(grep -c "submit time (the run id)" "$TEST_DIR/queries-$mode" || true)
  want=1
  [ "$mode" = plugin ] || want=0
  [ "$ids" = "$want" ] || fail "$mode: $ids reads for the run id, not $want (one per batch script under trainctl)"
  [ "$n" -ge 6 ] || fail "$mode: expected at least 2 reads a node over 30 s at a 10 s poll, got $n"
  [ "$n" -le 15 ] || fail "$mode: expected at most 5 reads a node over 30 s at a 10 s poll, got $n"
  grep -q libslurm "$TEST_DIR/queries-$mode" || fail "$mode: the reads did not go through libslurm"
  ! grep -q 'after the signal' "$TEST_DIR/queries-$mode" || fail "$mode: scancel --signal=USR1 made a supervisor ask the controller"
  grep -q 'received SIGUSR1' "$out" || fail "$mode: the supervisors did not log the notice"
  # No two nodes of the job in one second: the seconds of the reads, by node.
  python3 - "$TEST_DIR/queries-$mode" <<'PY' || fail "$mode: two nodes read EndTime in the same second"
import re, sys
gaps = []
reads = [(m.group(1), int(m.group(2))) for m in (re.search(r"\[(\S+) task.*EndTime.* at (\d+) ms", l) for l in open(sys.argv[1])) if m]
reads.sort(key=lambda r: r[1])
for (n1, t1), (n2, t2) in zip(reads, reads[1:]):
    if n1 != n2:
        gaps.append(t2 - t1)
bad = [(n1, n2, t1 // 1000) for (n1, t1) in reads for (n2, t2) in reads if n1 < n2 and t1 // 1000 == t2 // 1000]
print("  %d reads from %d nodes; the closest two nodes' reads were %d ms apart" % (len(reads), len({r[0] for r in reads}), min(gaps)))
sys.exit(1 if bad or len({r[0] for r in reads}) != 3 else 0)
PY
done
log "slurmctld counted REQUEST_JOB_INFO_SINGLE $single, REQUEST_FED_INFO $fed (besides scancel's $scancel_fed), REQUEST_JOB_INFO $all_info (scancel's)"
[ "$single" = "$reads" ] || fail "slurmctld counted $single job reads for $reads reads logged: not one RPC each"
[ "$fed" = 0 ] || fail "slurmctld counted $fed federation lookups: each read should be one RPC"
log "PASS: $reads controller reads in two jobs (the run id's among them), one RPC each ($single REQUEST_JOB_INFO_SINGLE, $fed REQUEST_FED_INFO), no two nodes of a job in one second, none for scancel --signal, none at the batch end"
