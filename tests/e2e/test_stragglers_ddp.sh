#!/usr/bin/env bash
# e2e-modes: run
# e2e-torch: trainctl.watch_ddp marks compute through torch DDP's communication hook
# Stragglers under synchronous training: real torch DDP (gloo) through torchrun, 2 nodes
# x 2 ranks, a gradient all_reduce in every step, where the fast ranks wait for the
# slowest, so that the wall time per step is the same on every rank. trainctl.watch_ddp
# marks each rank's own compute (from the end of one step's gradient exchange to its
# last gradient bucket being ready). Job 1: rank 2 (on the second node) computes 3x slower: it alone
# is reported, once, with its host, and trainctl report prices its wait from the marked
# compute. Job 2: an even run: nobody is reported.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

TRAIN_ARGS="--ddp --slow-rank 2 --slow-factor 3" supervised_job "$TEST_DIR/job1.sh" --kill-switch="$TEST_DIR/KILL1"
job=$(submit -N2 --ntasks-per-node=1 --time=10 "${JOB_OPTS[@]}" -o "$TEST_DIR/job1.out" "$TEST_DIR/job1.sh")
log "submitted job $job (DDP, rank 2 slowed 3x)"
wait_for 120 "4 ranks started" events_at_least start 4
second=$(job_node "$job" 2)  # ranks 2 and 3
wait_for 90 "the straggler report" test -s "$TRAINCTL_LOG_DIR/slow_nodes"
sleep 5  # room for a wrong second report
touch "$TEST_DIR/KILL1"
wait_for 60 "job 1 to end" job_ended "$job"
log "slow_nodes: $(cat "$TRAINCTL_LOG_DIR/slow_nodes")"
[ "$(wc -l <"$TRAINCTL_LOG_DIR/slow_nodes")" -eq 1 ] || fail "expected one report"
grep -q " host=$second rank=2 job=$job " "$TRAINCTL_LOG_DIR/slow_nodes" || fail "the report does not name rank 2 on $second"
factor=$(grep -o "factor=[0-9.]*" "$TRAINCTL_LOG_DIR/slow_nodes" | cut -d= -f2)
log "figure: under DDP, rank 2 (3x slower compute) reported with factor $factor of the fastest rank's compute"
grep -q "trainctl: straggler at step [0-9]*: this rank (2) on $second" "$TEST_DIR/job1.out" || fail "rank 2 did not log it"
[ "$(job_state "$job")" = COMPLETED ] || fail "job 1 ended $(job_state "$job")"
# What the straggler cost, as trainctl report prices it from the marked compute: every
# step rank 0 trained, on 2 nodes, waited (0.15 - 0.05) s for rank 2. Against rank 0's
# own log of its first and last step, within 4 %: the sleeps differ by 0.1 s, and the
# ranks' forward and backward on 2 shared cores by a few ms (measured: 98.2 ms apart,
# 17.67 node-s against 18.0).
"$BUILD/bin/trainctl" report --json --no-svg "$job" >"$TEST_DIR/report.json" || fail "trainctl report --json failed"
python3 - "$TEST_DIR/report.json" "$TEST_DIR/events/rank0.jsonl" <<'PY' || fail "the straggler's price is not what the program's log says"
import json, sys
price = json.load(open(sys.argv[1]))["tasks"][0]["straggler"]
ev = {e["event"]: e for e in map(json.loads, open(sys.argv[2]))}
steps = ev["exit"]["step"] - ev["start"]["step"]
expected = 2 * 0.1 * steps
print("straggler under DDP: %.1f node-s expected (%d steps logged), %s reported" % (expected, steps, price))
assert price and price["compute_marked"] and price["slowest_rank"] == 2 and price["ranks"] == 4, price
assert abs(price["node_s"] - expected) <= 0.04 * expected, (expected, price)
PY

export TRAINCTL_LOG_DIR=$TEST_DIR/logs2
mkdir -p "$TRAINCTL_LOG_DIR"
rm -rf "$TEST_DIR/events"
STEPS=400 TRAIN_ARGS=--ddp supervised_job "$TEST_DIR/job2.sh"
job2=$(submit -N2 --ntasks-per-node=1 --time=10 "${JOB_OPTS[@]}" -o "$TEST_DIR/job2.out" "$TEST_DIR/job2.sh")
log "submitted job $job2 (DDP, even)"
wait_for 120 "4 ranks started" events_at_least start 4
wait_for 120 "job 2's 400 steps (40 agreements: 8 straggler windows)" job_ended "$job2"
[ "$(job_state "$job2")" = COMPLETED ] || fail "job 2 ended $(job_state "$job2")"
[ ! -s "$TRAINCTL_LOG_DIR/slow_nodes" ] || fail "the even run reported a straggler: $(cat "$TRAINCTL_LOG_DIR/slow_nodes")"
if grep -q "straggler" "$TEST_DIR/job2.out"; then fail "the even run logged a straggler"; fi
[ "$(events_count finished)" -eq 4 ] || fail "job 2: $(events_count finished) of 4 ranks finished"
log "PASS: under DDP the 3x slow rank was reported once with its host; the even run reported nobody"
