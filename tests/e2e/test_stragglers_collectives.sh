#!/usr/bin/env bash
# e2e-modes: run
# e2e-torch: trainctl.watch_collectives wraps torch.distributed's own collectives
# Stragglers in a loop that calls torch.distributed's collectives itself, with no compute
# marks of its own: real torchrun, 1 node x 2 ranks each, a gradient all_reduce
# (dist.all_reduce) in every step, where the fast rank waits for the slow one, so that
# the wall time per step is the same on both. One line, trainctl.watch_collectives(ctl),
# marks the time outside collectives as each rank's compute. Two jobs at once: in one,
# rank 1 computes 3x slower and is reported, once; the other is even and names nobody.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

logs_slow=$TEST_DIR/logs_slow logs_even=$TEST_DIR/logs_even
mkdir -p "$logs_slow" "$logs_even"
TRAIN_ARGS="--allreduce --slow-rank 1 --slow-factor 3" supervised_job "$TEST_DIR/slow.sh" --kill-switch="$TEST_DIR/KILL" \
  --log-dir="$logs_slow"
STEPS=400 TRAIN_ARGS=--allreduce EVENTS_DIR=$TEST_DIR/events_even supervised_job "$TEST_DIR/even.sh" \
  --log-dir="$logs_even"
slow=$(TRAINCTL_LOG_DIR=$logs_slow submit -N1 --ntasks-per-node=1 --time=10 -o "$TEST_DIR/slow.out" "$TEST_DIR/slow.sh")
even=$(TRAINCTL_LOG_DIR=$logs_even submit -N1 --ntasks-per-node=1 --time=10 -o "$TEST_DIR/even.out" "$TEST_DIR/even.sh")
log "submitted job $slow (rank 1 slowed 3x) and job $even (even), both plain dist.all_reduce"
wait_for 120 "2 ranks of the slow job started" events_at_least start 2
wait_for 90 "the straggler report" test -s "$logs_slow/slow_nodes"
wait_for 120 "2 ranks of the even job started" bash -c "[ \$(cat $TEST_DIR/events_even/rank*.jsonl 2>/dev/null | grep -c '\"start\"') -ge 2 ]"
# The even job's 400 steps (40 agreements, 8 straggler windows) are the slow job's room
# for a wrong second report.
wait_for 120 "the even job's 400 steps" job_ended "$even"
touch "$TEST_DIR/KILL"
wait_for 60 "the slow job to end" job_ended "$slow"
log "slow_nodes: $(cat "$logs_slow/slow_nodes")"
[ "$(wc -l <"$logs_slow/slow_nodes")" -eq 1 ] || fail "expected one report"
grep -q " rank=1 job=$slow " "$logs_slow/slow_nodes" || fail "the report does not name rank 1"
factor=$(grep -o "factor=[0-9.]*" "$logs_slow/slow_nodes" | cut -d= -f2)
log "figure: with plain dist.all_reduce and no marks, rank 1 (3x slower compute) reported with factor $factor"
grep -q "trainctl: straggler at step [0-9]*: this rank (1)" "$TEST_DIR/slow.out" || fail "rank 1 did not log it"
[ "$(job_state "$slow")" = COMPLETED ] || fail "the slow job ended $(job_state "$slow")"
[ ! -s "$logs_even/slow_nodes" ] || fail "the even run reported a straggler: $(cat "$logs_even/slow_nodes")"
if grep -q "straggler" "$TEST_DIR/even.out"; then fail "the even run logged a straggler"; fi
[ "$(job_state "$even")" = COMPLETED ] || fail "the even job ended $(job_state "$even")"
log "PASS: plain collectives: the 3x slow rank reported once; the even run reported nobody"
