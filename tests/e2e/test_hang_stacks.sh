#!/usr/bin/env bash
# e2e-modes: plugin
# e2e-torch: the stacks of ranks waiting inside torch's all_reduce (gloo's threads, the C++ frames), as users see them
# Hang diagnosis with a real torchrun, 2 nodes x 2 ranks. First `trainctl stacks JOB`
# from outside takes every rank's stacks on demand (the gone `trainctl-run --dump-stacks`
# names it). Then, with
# --hang-timeout=20s: at step 160
# rank 3 (the second node) stops in a Python loop and rank 1 (the first) deadlocks inside a C call (a
# mutex locked twice); ranks 0 and 2 then wait in check()'s all_reduce. Each node's supervisor finds
# its ranks silent, writes every rank's Python stacks (faulthandler, all threads) and
# native stacks (eu-stack) to LOG_DIR/trainctl-<user>/stacks-<job>/rank<R>.txt; the first node says where
# the whole job is stuck; --on-notice runs once with TRAINCTL_NOTICE=hang and the
# summary, and sends it through `trainwatch notify` to a real HTTP receiver on loopback;
# then --hang-action=end-step ends the step. Prints the time from the stall to the
# stacks on disk.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

start_alert_servers
export HOOK_URL="http://127.0.0.1:$HTTP_PORT/hook" TRAINWATCH_STATE_DIR=$TEST_DIR/tw
cat >"$TEST_DIR/on_hang.sh" <<HOOK
#!/bin/bash
echo "\$TRAINCTL_NOTICE: \$TRAINCTL_NOTICE_DETAIL" >>"$TEST_DIR/hook.log"
[ "\$TRAINCTL_NOTICE" = hang ] || exit 0
exec $BUILD/bin/trainwatch notify --check hang --target "job \$SLURM_JOB_ID" --status critical \
  --text "\$TRAINCTL_NOTICE_DETAIL" --notify webhook:env:HOOK_URL
HOOK
chmod +x "$TEST_DIR/on_hang.sh"
# Rank 1 hangs in C: the example reads its fault from the arguments, so give rank 1 its
# own through a tiny wrapper around the training script.
cat >"$TEST_DIR/train_wrapper.py" <<PY
import os, runpy, sys
if os.environ.get("RANK") == "1":
    sys.argv += ["--hang-rank", "1", "--hang-in", "c"]
sys.argv[0] = "$TRAIN"
runpy.run_path("$TRAIN", run_name="__main__")
PY
# 20 s, not 10: the log-stall check below needs the job still running (its --stacks-of),
# and under load it ran 10 s after the stall, when end-step had already ended the job.
TRAIN_SCRIPT=$TEST_DIR/train_wrapper.py TRAIN_ARGS="--hang-rank 3 --hang-at 160 --hang-in python" \
  supervised_job "$TEST_DIR/job.sh" --hang-timeout=20s --hang-action=end-step --on-notice="$TEST_DIR/on_hang.sh"
job=$(submit -N2 --ntasks-per-node=1 --time=10 "${JOB_OPTS[@]}" -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job"
wait_for 120 "4 ranks started" events_at_least start 4
# Beside other tests the job may get any two of n1-n3: rank 1 runs on the first, rank 3 on
# the second.
node1=$(job_node "$job" 1) node2=$(job_node "$job" 2)
# The ranks know their supervisor and node state also where the plugin forks the task
# (22.05): without TRAINCTL_SUPERVISOR_PID no PR_SET_PTRACER, and Yama refuses eu-stack.
ranks_seen=0
for p in $(pgrep -f "$TEST_DIR/train_wrapper.py" || true); do
  env_of=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) || continue
  grep -q '^RANK=' <<<"$env_of" || continue
  ranks_seen=$((ranks_seen + 1))
  for v in TRAINCTL_SUPERVISOR_PID TRAINCTL_STATE TRAINCTL_LOG_DIR TRAINCTL_BAD_NODES; do
    grep -q "^$v=" <<<"$env_of" || fail "rank pid $p has no $v"
  done
done
[ "$ranks_seen" -eq 4 ] || fail "found $ranks_seen rank processes, not 4"
# On demand, while nothing hangs: from outside the job, through srun --overlap, from a
# shell that does not know the job's log directory (the nodes find it in the ranks').
out=$(env -u TRAINCTL_LOG_DIR "$BUILD/bin/trainctl" stacks "$job") || fail "trainctl stacks failed: $out"
log "$out"
grep -q "stacks of 4 ranks of job $job in $TRAINCTL_LOG_DIR/trainctl-$(id -un)/stacks-$job/" <<<"$out" || fail "trainctl stacks: $out"
for r in 0 1 2 3; do
  grep -q "on demand (trainctl stacks)" "$TRAINCTL_LOG_DIR/trainctl-$(id -un)/stacks-$job/rank$r.txt" || fail "no on-demand stacks of rank $r"
done
env -u TRAINCTL_LOG_DIR "$BUILD/bin/trainctl" stacks --json "$job" >"$TEST_DIR/stacks.json" || fail "trainctl stacks --json failed"
python3 - "$TEST_DIR/stacks.json" "$job" <<'PY' || fail "stacks --json: $(head -c 400 "$TEST_DIR/stacks.json")"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == 1 and j["job"] == sys.argv[2], j
assert [r["rank"] for r in j["ranks"]] == [0, 1, 2, 3], j["ranks"]
assert j["dir"].endswith("/stacks-" + sys.argv[2]), j["dir"]
PY
"$BUILD/bin/trainctl" stacks 999999 2>"$TEST_DIR/err" && fail "trainctl stacks of no job succeeded"
log "trainctl stacks 999999: $(cat "$TEST_DIR/err")"
[ "$(wc -l <"$TEST_DIR/err")" -eq 1 ] || fail "not one line: $(cat "$TEST_DIR/err")"
# The old flag is gone: one line naming the verb, the wrapper's usage status, no stacks.
set +e
out=$("$BUILD/bin/trainctl-run" --dump-stacks "$job" 2>"$TEST_DIR/err")
rc=$?
set -e
{ [ "$rc" -eq 125 ] && [ -z "$out" ]; } || fail "trainctl-run --dump-stacks: exit $rc, '$out'"
[ "$(wc -l <"$TEST_DIR/err")" -eq 1 ] || fail "the gone flag said more than one line: $(cat "$TEST_DIR/err")"
# shellcheck disable=SC2016  # backquotes in the text, not a command
grep -qF 'is gone: `trainctl stacks JOB` does it now' "$TEST_DIR/err" || fail "the gone flag did not name the verb: $(cat "$TEST_DIR/err")"
wait_for 120 "2 ranks to hang" events_at_least hang 2
# From outside, as cron would: trainwatch log-stall finds the logs silent and, once per
# stall, puts where the ranks are stuck into its alert.
sleep 4
set +e
stall=$(PATH=$BUILD/bin:$PATH "$BUILD/bin/trainwatch" log-stall --path "$TEST_DIR/events/rank*.jsonl" --max-age 3s \
  --stacks-of "$job")
rc=$?
set -e
log "$stall"
[ "$rc" -eq 2 ] || fail "log-stall exited $rc, not 2 (CRITICAL)"
grep -q "stacks of 4 ranks of job $job in .*rank 3 on $node2 in hang (train_example.py" <<<"$stall" ||
  fail "the stall alert does not say where the ranks are stuck"
hung_at=$(cat "$TEST_DIR"/events/rank*.jsonl | python3 -c '
import json, sys
print(max(json.loads(l)["time"] for l in sys.stdin if "\"hang\"" in l))')
dir=$TRAINCTL_LOG_DIR/trainctl-$(id -un)/stacks-$job
wait_for 60 "stacks of 4 ranks" bash -c "[ \$(ls $dir/rank*.txt 2>/dev/null | wc -l) -ge 4 ]"
wait_for 60 "the job to end (end-step)" job_ended "$job"
for r in 0 1 2 3; do
  f=$dir/rank$r.txt
  [ -s "$f" ] || fail "no stacks for rank $r: $(ls "$dir")"
  grep -q '^  File "' "$f" || fail "rank $r: no Python stack in $f"
  grep -q '^#0 ' "$f" || fail "rank $r: no native stack in $f"
done
grep -q "hang (train_example.py" "$dir/rank3.txt" || fail "rank 3's innermost frame is not hang(): $(head -3 "$dir/rank3.txt")"
grep -Eq '^#[0-9]+ +0x[0-9a-f]+ (__lll_lock_wait|futex_wait|__futex_abstimed_wait|pthread_mutex_lock)' "$dir/rank1.txt" ||
  fail "rank 1 (deadlocked in C) has no lock frame: $(cat "$dir/rank1.txt")"
summary=$(grep -o 'hang: the whole job (4 of 4 ranks dumped): .*' "$TEST_DIR/job.out") ||
  fail "no whole-job summary: $(grep 'hang' "$TEST_DIR/job.out")"
log "$summary"
grep -q "2 of 4 ranks in all_reduce" <<<"$summary" || fail "the common frame is not the collective"
grep -q "rank 1 on $node1 in" <<<"$summary" || fail "rank 1 is not named"
grep -q "rank 3 on $node2 in hang (train_example.py" <<<"$summary" || fail "rank 3 is not named with its frame"
# This torch (1.13) has no flight recorder: the ranks answer the supervisor's request
# with that, and the summary says so (test_flight_recorder reads sid's torch 2.x's).
grep -Eq '; flight recorder: no flight recorder was available \(torch 1\.[0-9.+a-z]* has no flight recorder for gloo\)$' <<<"$summary" ||
  fail "the summary does not say that no flight recorder was available"
[ "$(grep -c '^hang:' "$TEST_DIR/hook.log")" -eq 1 ] || fail "the hang hook ran $(grep -c '^hang:' "$TEST_DIR/hook.log") times"
wait_for 20 "the alert at the HTTP receiver" bash -c "grep -l 'rank 3 on $node2' $REQDIR/*.json"
grep -q "hang: ending the step" "$TEST_DIR/job.out" || fail "end-step did not run"
[ "$(job_state "$job")" != COMPLETED ] || fail "the hung step was not ended"
# What end-step killed is no crash: no node is remembered for it.
if grep -q "crashed" "$TRAINCTL_BAD_NODES" 2>/dev/null; then fail "end-step's kill was counted as a crash: $(cat "$TRAINCTL_BAD_NODES")"; fi
python3 - "$hung_at" "$dir" <<'PY'
import glob, os, sys
hung = float(sys.argv[1])
last = max(os.stat(f).st_mtime for f in glob.glob(sys.argv[2] + "/rank*.txt"))
print("figure: the last rank's stacks were on disk %.2f s after the stall (hang timeout 20 s, counted from the "
      "last agreement, up to 0.5 s before the stall)" % (last - hung))
PY
# Where the cluster keeps accounting, trainctl report counts the time from the stall to
# the end as the hang's, apart from other lost work.
if grep -q '^AccountingStorageType=accounting_storage/slurmdbd' "$SLURM_CONF"; then
  wait_for 60 "the job to end" job_ended "$job"
  "$BUILD/bin/trainctl" report --json --no-svg "$job" >"$TEST_DIR/report.json" || fail "trainctl report failed"
  python3 - "$TEST_DIR/report.json" <<'PY' || fail "the report does not show the hang"
import json, sys
t = json.load(open(sys.argv[1]))["tasks"][-1]
kinds = [n["kind"] for n in t["notices"]]
print("report: hung %.1f s, lost %.1f s, notices %s" % (t["hung_s"], t["lost_s"], kinds))
assert kinds == ["hang"], t  # once, though both nodes' supervisors found it
# The first node's summary, with what the flight recorder said (here: that there was none).
assert t["hang_summary"].startswith("2 of 4 ranks in all_reduce"), t["hang_summary"]
assert "; flight recorder: no flight recorder was available" in t["hang_summary"], t["hang_summary"]
assert t["hung_s"] >= 18.5, t  # the hang timeout, 20 s, less SLURM's whole seconds
PY
  text=$("$BUILD/bin/trainctl" report --no-svg "$job") || fail "trainctl report failed"
  grep -q "the hang: 2 of 4 ranks in all_reduce" <<<"$text" || fail "trainctl report's text does not tell the hang: $text"
fi
sleep 2  # the killed step's processes are reaped
stop_alert_servers
left=$(pgrep -f "$TEST_DIR" || true)
[ -z "$left" ] || fail "processes left behind: $(ps -o pid,args -p "${left//$'\n'/,}")"
log "PASS: 4 ranks' stacks, hung ranks named, alert sent, step ended"
