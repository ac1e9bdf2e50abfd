#!/usr/bin/env bash
# e2e-modes: run plugin
# e2e-alone: it counts the RPCs slurmctld receives from everyone
# What the supervisors cost the controller, counted by slurmctld itself (sdiag): a 3-node
# job with a 10 s EndTime poll. Each EndTime read is one RPC (REQUEST_JOB_INFO_SINGLE,
# no REQUEST_FED_INFO), no two nodes read in the same second, a user's
# `scancel --signal=USR1` costs no read, and the batch script's end asks nothing.
# Nothing else may ask the controller about jobs while it counts: the test waits on the
# job's output file, not on scontrol.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

cat >"$TEST_DIR/job.sh" <<JOB
#!/bin/bash
export TRAINCTL_LOG_QUERIES=1
if [ "$MODE" = run ]; then
  srun $BUILD/bin/trainctl-run --graceful-exit=1m --endtime-poll=10s -- sleep 45
else
  srun sleep 45
fi
echo "batch script done"
JOB
opts=()
[ "$MODE" = plugin ] && opts=(--graceful-exit=1)
rpc_count() {  # rpc_count TYPE: slurmctld's count of that message type since the reset
  sdiag | awk -v t="$1" '$1 == t { for (i = 2; i <= NF; i++) if ($i ~ /^count:/) { sub("count:", "", $i); print $i; exit } }' |
    grep . || echo 0
}
batch_done() { grep -q "batch script done" "$TEST_DIR/job.out" 2>/dev/null; }

sdiag -r >/dev/null || fail "sdiag -r failed"
export TRAINCTL_LOG_QUERIES=1
job=$(submit -N3 --ntasks-per-node=1 --time=10 "${opts[@]}" -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted 3-node job $job ($MODE)"
sleep 20
log "scancel --signal=USR1 $job (a user's notice: no EndTime read)"
# scancel itself asks the controller (a federation lookup and a job list): counted
# around it, and not held against the supervisors.
fed_before=$(rpc_count REQUEST_FED_INFO)
scancel --signal=USR1 "$job"
scancel_fed=$(($(rpc_count REQUEST_FED_INFO) - fed_before))
wait_for 120 "the batch script to end" batch_done
sleep 2  # the batch step's supervisor ends after its script
single=$(rpc_count REQUEST_JOB_INFO_SINGLE)
fed=$(($(rpc_count REQUEST_FED_INFO) - scancel_fed))
all_info=$(rpc_count REQUEST_JOB_INFO)
wait_for 60 "the job to end" job_ended "$job"
[ "$(job_state "$job")" = COMPLETED ] || fail "job ended $(job_state "$job")"

grep -o 'trainctl-run\[[^]]*\]: asked the controller.*' "$TEST_DIR/job.out" >"$TEST_DIR/queries" || true
reads=$(wc -l <"$TEST_DIR/queries")
log "EndTime reads logged: $reads; slurmctld counted REQUEST_JOB_INFO_SINGLE $single, REQUEST_FED_INFO $fed (besides scancel's $scancel_fed), REQUEST_JOB_INFO $all_info (scancel's)"
sed 's/^/  /' "$TEST_DIR/queries"
[ "$reads" -ge 9 ] || fail "expected at least 3 reads a node over 45 s at a 10 s poll, got $reads"
[ "$reads" -le 21 ] || fail "expected at most 7 reads a node over 45 s at a 10 s poll, got $reads"
grep -q libslurm "$TEST_DIR/queries" || fail "the reads did not go through libslurm"
[ "$single" = "$reads" ] || fail "slurmctld counted $single job reads for $reads EndTime reads: not one RPC each"
[ "$fed" = 0 ] || fail "slurmctld counted $fed federation lookups: each read should be one RPC"
! grep -q 'after the signal' "$TEST_DIR/queries" || fail "scancel --signal=USR1 made a supervisor ask the controller"
grep -q 'received SIGUSR1' "$TEST_DIR/job.out" || fail "the supervisors did not log the notice"
# No two nodes in one second: the seconds of the reads, by node.
python3 - "$TEST_DIR/queries" <<'PY' || fail "two nodes read EndTime in the same second"
import re, sys
by_second, gaps = {}, []
reads = [(m.group(1), int(m.group(2))) for m in (re.search(r"\[(\S+) task.* at (\d+) ms", l) for l in open(sys.argv[1])) if m]
reads.sort(key=lambda r: r[1])
for (n1, t1), (n2, t2) in zip(reads, reads[1:]):
    if n1 != n2:
        gaps.append(t2 - t1)
bad = [(n1, n2, t1 // 1000) for (n1, t1) in reads for (n2, t2) in reads if n1 < n2 and t1 // 1000 == t2 // 1000]
print("  %d reads from %d nodes; the closest two nodes' reads were %d ms apart" % (len(reads), len({r[0] for r in reads}), min(gaps)))
sys.exit(1 if bad or len({r[0] for r in reads}) != 3 else 0)
PY
log "PASS: $reads EndTime reads, one RPC each ($single REQUEST_JOB_INFO_SINGLE, $fed REQUEST_FED_INFO), no two nodes in one second, none for scancel --signal, none at the batch end"
