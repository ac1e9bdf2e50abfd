#!/usr/bin/env bash
# e2e-alone: it holds n1 exclusively so that its task can only land on n2 and n3
# Bad-node memory with the template as users submit it (trainctl-run, no plugin):
# `sbatch --array=1-2%1 -N2`. Task 1 is made to land on n2 and n3 (a placeholder job holds
# n1, and keeps holding it), where the ranks on n2 crash as on a node with a broken GPU,
# first: n2's supervisor records n2 in the user's bad_nodes file (n3's ranks die after,
# and n3 is not blamed); the template puts the array's pending tasks off it: task 2
# waits while only n2 and n3 are free, then runs on n1 and n3 and trains. (A crash in a
# one-node job is only a suspicion, which keeps nobody off a node: test_no_progress.) The
# memory expires: the expiry is applied when the list is read, so the run keeps an
# expiry of 10 minutes (under the test command's load the array took 48 s, past the
# 40 s this test once used), and at the end the list is read again with an expiry of
# 5 s (--expiry=5s, then TRAINCTL_BAD_NODE_EXPIRY=5s). The cap never excludes more nodes
# than the partition can spare. Last, a node failing the template's HEALTH_CHECK is
# remembered and its task ends.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
export TRAINCTL_BAD_NODE_EXPIRY=10m
use_train_template "--steps 100000 --step-time 0.05 --crash-on n2 --crash-at 30"
export GPUS_PER_NODE=2
hold=$(submit -N1 -w n1 --exclusive --time=5 -J hold --wrap "sleep 300")
wait_for 30 "the placeholder to hold n1" bash -c "[ \"\$(squeue -h -j $hold -o %T)\" = RUNNING ]"
job=$(submit --array=1-2%1 -N2 --time=5 -J bad train.slurm)
log "submitted array $job; task 1 can only run on n2 and n3"
wait_for 60 "task 1 to start" bash -c "[ \"\$(squeue -h -j ${job}_1 -o %T 2>/dev/null)\" = RUNNING ]"
[ "$(job_field "${job}_1" NodeList)" = "n[2-3]" ] || fail "task 1 runs on $(job_field "${job}_1" NodeList), not n2 and n3"
task1=$(job_field "${job}_1" JobId)
ev=$TEST_DIR/logs/bad
count() { cat "$ev"/rank*.jsonl 2>/dev/null | grep -c "\"event\": \"$1\"" || true; }
wait_for 120 "task 1 to crash" bash -c "[ \$(cat $ev/rank*.jsonl 2>/dev/null | grep -c '\"crash\"') -ge 1 ]"
# The placeholder still holds n1, and n2 and n3 are free again: task 2 waits, kept off n2.
wait_for 60 "task 2 to be kept off n2" bash -c "[ \"\$(squeue -h -j ${job}_2 -o %T 2>/dev/null)\" = PENDING ] &&
  scontrol show job ${job}_2 | grep -q 'ExcNodeList=n2'"
sleep 5
[ "$(squeue -h -j "${job}_2" -o %T)" = PENDING ] || fail "task 2 did not wait: $(squeue -h -j "${job}_2" -o '%T %N')"
log "task 2 waits although n2 and n3 are idle; releasing n1"
scancel "$hold"
wait_for 120 "task 2 to train" bash -c "[ \$(cat $ev/rank*.jsonl 2>/dev/null | grep -c '\"start\"') -ge 8 ]"
[ -s "$TRAINCTL_BAD_NODES" ] || fail "nothing recorded: $(cat "$TEST_DIR"/bad-*.out)"
log "recorded: $(cat "$TRAINCTL_BAD_NODES")"
[ "$(wc -l <"$TRAINCTL_BAD_NODES")" -eq 1 ] || fail "expected one finding (the first node to fail)"
grep -q "^[0-9]* n2 job=$task1 .*reason=crashed (SIGABRT in rank [01] of array $job, the first death of the job" "$TRAINCTL_BAD_NODES" ||
  fail "the finding is not n2's crash: $(cat "$TRAINCTL_BAD_NODES")"
node2=$(job_field "${job}_2" NodeList)
[ "$node2" = "n[1,3]" ] || fail "task 2 runs on '$node2', not n1 and n3"
grep -q "the array's pending tasks (1) keep off n2" "$TEST_DIR/bad-$task1.out" || fail "the template did not keep the array off n2"
log "task 2 runs on $node2, not n2"
touch "$TEST_DIR/kill-switch-bad"
wait_for 90 "the array to end" bash -c "[ -z \"\$(squeue -h -j $job 2>/dev/null)\" ]"

# The list as the template reads it: n2 until the memory expires, then nothing; and a
# cap of 0 excludes nothing however many nodes are bad.
[ "$("$BUILD/bin/trainctl" bad-nodes 2>/dev/null)" = n2 ] || fail "n2 was forgotten too early"
[ -z "$("$BUILD/bin/trainctl" bad-nodes list --cap=0 2>"$TEST_DIR/err")" ] || fail "the cap was ignored"
grep -q "1 more bad node not excluded (--cap)" "$TEST_DIR/err" || fail "the cap was silent: $(cat "$TEST_DIR/err")"
# --json, for scripts: the same list, and why (schema 1).
"$BUILD/bin/trainctl" bad-nodes --json >"$TEST_DIR/bad.json" || fail "bad-nodes --json failed"
python3 - "$TEST_DIR/bad.json" "$job" <<'PY' || fail "bad-nodes --json is not what the list said: $(cat "$TEST_DIR/bad.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == 1 and j["exclude"] == ["n2"], j
n = j["nodes"][0]
assert n["host"] == "n2" and n["excluded"] and n["reason"] and n["age_s"] >= 0, n
PY
# The old flag is gone: one line naming the verb, the wrapper's usage status, no list.
set +e
old=$("$BUILD/bin/trainctl-run" --bad-nodes 2>"$TEST_DIR/err")
rc=$?
set -e
{ [ "$rc" -eq 125 ] && [ -z "$old" ]; } || fail "trainctl-run --bad-nodes: exit $rc, '$old'"
# shellcheck disable=SC2016  # backquotes in the text, not a command
[ "$(grep -cF 'is gone: `trainctl bad-nodes` does it now' "$TEST_DIR/err")" -eq 1 ] || fail "the gone flag did not name the verb once: $(cat "$TEST_DIR/err")"
# Expiry: a finding older than the expiry is forgotten (the finding is long past 6 s old
# by now; the wait only guards a clock that reads the same second).
recorded=$(cut -d' ' -f1 "$TRAINCTL_BAD_NODES")
wait_for 10 "the finding to be 6 s old" bash -c "[ \$(date +%s) -ge $((recorded + 6)) ]"
left=$("$BUILD/bin/trainctl" bad-nodes --expiry=5s 2>"$TEST_DIR/err") || fail "bad-nodes --expiry=5s: $(cat "$TEST_DIR/err")"
[ -z "$left" ] || fail "n2 is still excluded after --expiry=5s: '$left'"
left=$(TRAINCTL_BAD_NODE_EXPIRY=5s "$BUILD/bin/trainctl" bad-nodes 2>"$TEST_DIR/err") ||
  fail "TRAINCTL_BAD_NODE_EXPIRY=5s bad-nodes: $(cat "$TEST_DIR/err")"
[ -z "$left" ] || fail "n2 is still excluded after TRAINCTL_BAD_NODE_EXPIRY=5s: '$left'"
"$BUILD/bin/trainctl" bad-nodes forget n2 2>/dev/null || fail "trainctl bad-nodes forget n2 failed"

# A node that fails the template's HEALTH_CHECK is remembered too, and the task ends
# before training.
# shellcheck disable=SC2016  # expanded on the node
export HEALTH_CHECK='[ "$SLURMD_NODENAME" != n3 ]'
hc=$(submit -N1 -w n3 --time=5 -J health train.slurm)
wait_for 60 "the health-checked job to end" job_ended "$hc"
[ "$(job_state "$hc")" = FAILED ] || fail "a failed health check left the job $(job_state "$hc")"
grep -q "^[0-9]* n3 job=$hc .*reason=failed the health check: " "$TRAINCTL_BAD_NODES" ||
  fail "n3 not remembered: $(cat "$TRAINCTL_BAD_NODES")"
[ "$("$BUILD/bin/trainctl" bad-nodes 2>/dev/null)" = n3 ] || fail "n3 is not excluded after its health check"
# Repaired: forgotten at once, and only n3's findings.
"$BUILD/bin/trainctl" bad-nodes mark n1 "a check of my own" 2>/dev/null || fail "trainctl bad-nodes mark failed"
"$BUILD/bin/trainctl" bad-nodes forget n3 2>"$TEST_DIR/err" || fail "trainctl bad-nodes forget failed: $(cat "$TEST_DIR/err")"
grep -q "n3: 1 finding forgotten" "$TEST_DIR/err" || fail "forget said: $(cat "$TEST_DIR/err")"
[ "$("$BUILD/bin/trainctl" bad-nodes 2>/dev/null)" = n1 ] || fail "after forget n3: $("$BUILD/bin/trainctl" bad-nodes 2>&1)"
set +e
"$BUILD/bin/trainctl" bad-nodes mark 'n[1-3]' why 2>"$TEST_DIR/err"
rc=$?
set -e
[ "$rc" -eq 2 ] || fail "a hostlist given as the node: exit $rc, not 2"
grep -q "is not one node's name" "$TEST_DIR/err" || fail "mark n[1-3] said: $(cat "$TEST_DIR/err")"
log "PASS: crash on n2 recorded, task 2 kept off n2, the memory expired (5 s); n3 failed its health check and was forgotten"
