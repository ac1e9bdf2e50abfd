#!/usr/bin/env bash
# e2e-modes: run
# Stragglers through the agreement check() already makes: 2 nodes x 2
# ranks, rank 2 (on the second node) made 3x slower per step. After 5 agreements in a
# row it is reported once: in the job log (rank 0 and the rank itself, with its node),
# in LOG_DIR/slow_nodes (host, rank, job, step times; written by rank 2's node's supervisor from
# what the rank put in the node state), in the user's bad-node memory,
# and by `trainwatch slow-nodes` as a WARNING with its Prometheus textfile metric. No
# other rank is named. (The even runs of test_torchrun_switches and test_mpi_agreement
# check that no straggler is reported when there is none.)
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

TRAIN_ARGS="--slow-rank 2 --slow-factor 3" supervised_job "$TEST_DIR/job.sh" --kill-switch="$TEST_DIR/KILL"
job=$(submit -N2 --ntasks-per-node=1 --time=10 "${JOB_OPTS[@]}" -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job"
wait_for 120 "4 ranks started" events_at_least start 4
second=$(job_node "$job" 2)  # ranks 2 and 3
wait_for 60 "the straggler report" test -s "$TRAINCTL_LOG_DIR/slow_nodes"
sleep 3  # room for a wrong second report
touch "$TEST_DIR/KILL"
wait_for 60 "the job to end" job_ended "$job"
log "slow_nodes: $(cat "$TRAINCTL_LOG_DIR/slow_nodes")"
[ "$(wc -l <"$TRAINCTL_LOG_DIR/slow_nodes")" -eq 1 ] || fail "expected one report"
node2=$(grep -o "host=[^ ]*" "$TRAINCTL_LOG_DIR/slow_nodes" | cut -d= -f2)
grep -q " rank=2 job=$job " "$TRAINCTL_LOG_DIR/slow_nodes" || fail "the report does not name rank 2 of job $job"
[ "$node2" = "$second" ] || fail "rank 2 ran on $second, the report says $node2"
grep -q "trainctl: straggler at step [0-9]*: rank 2 takes" "$TEST_DIR/job.out" || fail "rank 0 did not log it"
grep -q "trainctl: straggler at step [0-9]*: this rank (2) on $second .*; the node's supervisor records it in slow_nodes" \
  "$TEST_DIR/job.out" || fail "rank 2 did not log it"
# The rank's thread opens nothing in the log directory: its node's supervisor wrote the line.
grep -q "straggler: rank 2: recorded in $TRAINCTL_LOG_DIR/slow_nodes" "$TEST_DIR/job.out" ||
  fail "$second's supervisor did not say it recorded the finding: $(grep straggler "$TEST_DIR/job.out")"
grep -q "^[0-9]* $second job=$job .*reason=slow (rank 2, x" "$TRAINCTL_BAD_NODES" || fail "$second not in the bad-node memory"
set +e
out=$("$BUILD/bin/trainwatch" slow-nodes --path "$TRAINCTL_LOG_DIR/slow_nodes" --textfile "$TEST_DIR/prom")
rc=$?
set -e
log "$out"
[ "$rc" -eq 1 ] || fail "trainwatch slow-nodes exited $rc, not 1 (WARNING)"
grep -q "$second rank 2 x" <<<"$out" || fail "the alert does not name $second rank 2"
grep -rq 'stragglers.* 1$' "$TEST_DIR/prom" || fail "no straggler metric: $(cat "$TEST_DIR"/prom/* 2>/dev/null)"
log "PASS: rank 2 on $second reported once, logged, remembered, alerted"
