#!/usr/bin/env bash
# e2e-modes: run
# e2e-core: run
# e2e-torch: torch.distributed.checkpoint.async_save over gloo, as torch 2.x writes it
# Asynchronous saves (issue 61): real torchrun and DCP's async_save, each write made as
# slow as a large model's by the template's storage writer (--save-time), two arrays of
# 2 tasks under trainctl-run side by side.
#   A, 2 nodes x 2 ranks, 8 s writes, a lead of 30 s (--graceful-exit=30s):
#     (4) the first save-switch save's write raises on rank 3: nothing is committed, and
#         the log names the save and the error;
#     (1) the second: trainctl.resume_path, polled while the write is in flight, stays
#         on nothing until every rank's write ended (each rank's marker is newer than
#         every file of the save), then gives it;
#     (2) the deadline: the ranks save and wait for the write, which commits inside the
#         lead; task 1 ends COMPLETED and task 2 resumes from that save.
#   B, 1 node x 2 ranks, 60 s writes, the same lead:
#     (3) a save-switch save commits; the deadline's write is longer than the lead: said
#         before the job's end, not committed, the report names the save the end cut,
#         and task 2 resumes from the save before.
# Where torch has no async_save (Debian 12's 1.13) it skips; trixie's lane leaves it to
# sid's, whose torch users run today.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

# Read from torch's files, not imported: an import costs 1-2 CPU-s where the test skips.
has_async_save() {
  /usr/bin/python3 -c 'import importlib.util, os, sys
spec = importlib.util.find_spec("torch")
saver = spec and os.path.join(os.path.dirname(spec.origin), "distributed", "checkpoint", "state_dict_saver.py")
sys.exit(0 if saver and os.path.exists(saver) and "def async_save(" in open(saver).read() else 1)' 2>/dev/null
}
if ! has_async_save; then
  log "SKIP: this torch has no torch.distributed.checkpoint.async_save (torch 2.3+; sid's root has it)"
  exit 77
fi
if [ "${TRAINCTL_TESTBED_RELEASE:-}" = trixie ]; then
  log "SKIP: runs in sid's root (scripts/testbed test sid -R async_saves); trixie's lane is the longest"
  exit 77
fi

# Each array's checkpoints in ckpt-X/, its ranks' events in events-X/, its tasks' logs in
# X-TASK.out (where a failure's report finds them).
CKPT_DIR=$TEST_DIR/ckpt-a EVENTS_DIR=$TEST_DIR/events-a TRAIN_ARGS="--async-save --save-time 8 --fail-save 3:1" \
  supervised_job "$TEST_DIR/a.sh" --graceful-exit=30s --save-switch="$TEST_DIR/SAVE-a"
a=$(submit -N2 --ntasks-per-node=1 --time=2 --array=1-2%1 "${JOB_OPTS[@]}" -o "$TEST_DIR/a-%a.out" "$TEST_DIR/a.sh")
CKPT_DIR=$TEST_DIR/ckpt-b EVENTS_DIR=$TEST_DIR/events-b TRAIN_ARGS="--async-save --save-time 60" \
  supervised_job "$TEST_DIR/b.sh" --graceful-exit=30s --save-switch="$TEST_DIR/SAVE-b"
b=$(submit -N1 --ntasks-per-node=1 --time=2 --array=1-2%1 "${JOB_OPTS[@]}" -o "$TEST_DIR/b-%a.out" "$TEST_DIR/b.sh")
log "submitted arrays $a (2 nodes x 2 ranks, 8 s writes) and $b (1 node x 2 ranks, 60 s writes)"

# events_of DIR EVENT [FIELD=VALUE]: the JSON lines of EVENT in DIR's rank files.
steps_of() {
  cat "$1"/rank*.jsonl 2>/dev/null | python3 -c 'import json, sys
print(" ".join(str(s) for s in sorted({json.loads(l)["step"] for l in sys.stdin if "\"event\": \"'"$2"'\"" in l})))'
}
resume_of() { python3 -c 'import sys, trainctl; print(trainctl.resume_path(sys.argv[1]))' "$1" 2>/dev/null; }
step_dir() { printf '%s/ckpt-%s/step_%08d' "$TEST_DIR" "$1" "$2"; }

both_training() {
  template_events_at_least "$TEST_DIR/events-a" start 4 && template_events_at_least "$TEST_DIR/events-b" start 2
}
wait_for 240 "the ranks of both arrays' first tasks to train" both_training
touch "$TEST_DIR/SAVE-b"
log "B: touched the save switch (a 60 s write begins)"

# (4) A's first save: rank 3's write raises.
touch "$TEST_DIR/SAVE-a"
wait_for 90 "A's first save to end on every rank" template_events_at_least "$TEST_DIR/events-a" written 4
s1=$(steps_of "$TEST_DIR/events-a" written)  # every rank's write of it ended, well or not
[[ $s1 =~ ^[0-9]+$ ]] || fail "A's first save was not at one step: $s1"
grep -q "its part of the save at step $s1 failed (as on a full disk)" "$TEST_DIR/a-1.out" ||
  fail "rank 3's write did not fail: $(grep -F "step $s1" "$TEST_DIR/a-1.out")"
failed=$(grep -cE "trainctl: the save at step $s1 \(.*\) failed [0-9.]+ s after it began: .*nothing is committed" \
  "$TEST_DIR/a-1.out" || true)
{ [ "$failed" -ge 1 ] && [ "$failed" -le 4 ]; } || fail "not one line per rank for the failed write ($failed)"
[ "$(resume_of "$TEST_DIR/ckpt-a")" = None ] || fail "resume_path gave $(resume_of "$TEST_DIR/ckpt-a") after a failed write"
log "(4) the write of the save at step $s1 failed on rank 3: $failed line(s), nothing committed"

# (1) A's second save, resume_path polled while its 8 s write is in flight.
touch "$TEST_DIR/SAVE-a"
polls=$(python3 - "$TEST_DIR" "$s1" <<'PY'
import glob, json, sys, time, trainctl
t, first = sys.argv[1], int(sys.argv[2])
def written():  # the second save's write, ended well
    lines = [json.loads(l) for f in glob.glob(t + "/events-a/rank*.jsonl") for l in open(f) if '"written"' in l]
    return [e for e in lines if e.get("error") is None and e["step"] != first]
began, seen = time.time(), []
while len(written()) < 4 and time.time() - began < 90:
    seen.append(trainctl.resume_path(t + "/ckpt-a"))
    time.sleep(0.1)
seen.append(trainctl.resume_path(t + "/ckpt-a"))
print(" ".join(str(x) for x in seen))
PY
)
s2=$(cat "$TEST_DIR/events-a"/rank*.jsonl | python3 -c 'import json, sys
print(" ".join(str(s) for s in sorted({json.loads(l)["step"] for l in sys.stdin
      if "\"written\"" in l and json.loads(l)["error"] is None and json.loads(l)["step"] != int(sys.argv[1])})))' "$s1")
[[ $s2 =~ ^[0-9]+$ ]] || fail "A's second save did not end at one step on every rank: $s2"
final=$(step_dir a "$s2")
n=$(wc -w <<<"$polls")
early=$(tr ' ' '\n' <<<"$polls" | head -n $((n - 1)) | grep -c "^$final$" || true)
[ "$n" -ge 10 ] || fail "resume_path was polled $n times during the write: too few to tell"
[ "$(tr ' ' '\n' <<<"$polls" | tail -n 1)" = "$final" ] || fail "resume_path did not give $final once written"
# A poll may see the last commit just before the last rank's written event: the
# meaningful order is the files'. Every rank's marker is newer than every file of the save.
python3 - "$final" <<'PY' || fail "a rank committed before the save's files were written"
import os, sys
d = sys.argv[1]
names = os.listdir(d)
markers = [os.lstat(os.path.join(d, n)).st_mtime_ns for n in names if n.startswith(".trainctl-committed.")]
data = [os.lstat(os.path.join(d, n)).st_mtime_ns for n in names if not n.startswith(".trainctl-")]
assert len(markers) == 4 and data, (names,)
assert min(markers) >= max(data), "a marker %d ns before the save's last file" % (max(data) - min(markers))
print("4 markers, each after the %d files of the save" % len(data))
PY
log "(1) resume_path polled $n times during the write of step $s2: $((n - 1 - early)) gave the save before, $early the new one only after the last commit"

# (2) A's deadline: the ranks save, wait for the write, commit inside the lead.
wait_for 150 "A's task 1 to exit at its deadline and end" job_ended "${a}_1"
[ "$(job_state "${a}_1")" = COMPLETED ] || fail "A's task 1 ended $(job_state "${a}_1")"
s3=$(steps_of "$TEST_DIR/events-a" exit)
[[ $s3 =~ ^[0-9]+$ ]] || fail "A's ranks did not exit at one step: $s3"
grep -q "waiting for this rank's writes: 1 pending, the save at step $s3" "$TEST_DIR/a-1.out" ||
  fail "no rank waited for its write at the exit: $(grep trainctl: "$TEST_DIR/a-1.out" | tail -n 20)"
committed=$(grep -E "the save at step $s3 is committed by every rank on [a-z0-9]+ \(([0-9],?)+\), the last [0-9.]+ s after it was asked" "$TEST_DIR/a-1.out") ||
  fail "the supervisors did not say the deadline's save was committed: $(grep -F "step $s3" "$TEST_DIR/a-1.out")"
log "(2) the deadline's save at step $s3 was written and committed before the job ended: $(head -n 1 <<<"$committed" | sed 's/.*trainctl: //')"
wait_for 120 "A's task 2 to start" template_events_at_least "$TEST_DIR/events-a" start 8
resumed=$(cat "$TEST_DIR/events-a"/rank*.jsonl | python3 -c 'import json, sys
print(sorted({json.loads(l)["resumed_from"] for l in sys.stdin if "\"start\"" in l and "\"resumed_from\": null" not in l}))')
[ "$resumed" = "[$s3]" ] || fail "A's task 2 resumed from $resumed, not from the deadline's save at $s3"
scancel "$a"
log "(2) A's task 2 resumed from the save at step $s3"

# (3) B: the save-switch save commits; the deadline's 60 s write outlasts the 30 s lead.
wait_for 150 "B's save-switch save to be written" template_events_at_least "$TEST_DIR/events-b" written 2
b1=$(steps_of "$TEST_DIR/events-b" written)
[ "$(resume_of "$TEST_DIR/ckpt-b")" = "$(step_dir b "$b1")" ] || fail "B's first save at $b1 was not committed"
wait_for 150 "B's task 1 to end" job_ended "${b}_1"
b2=$(steps_of "$TEST_DIR/events-b" exit)
[[ $b2 =~ ^[0-9]+$ ]] || fail "B's ranks did not exit at one step: $b2"
grep -qE "the save at step $b2 \(.*\) is still being written [0-9.]+ s after it began, and the job ends at [0-9:]+: unless it ends first, the job's end cuts it, and it is not committed" \
  "$TEST_DIR/b-1.out" || fail "nobody said the deadline's write would be cut: $(grep trainctl: "$TEST_DIR/b-1.out" | tail -n 20)"
[ "$(resume_of "$TEST_DIR/ckpt-b")" = "$(step_dir b "$b1")" ] || fail "resume_path gave $(resume_of "$TEST_DIR/ckpt-b"), not the save at $b1"
log "(3) B's deadline save at step $b2 was said to be cut and is not committed; resume_path keeps step $b1"
wait_for 120 "B's task 2 to start" template_events_at_least "$TEST_DIR/events-b" start 4
resumed=$(cat "$TEST_DIR/events-b"/rank*.jsonl | python3 -c 'import json, sys
print(sorted({json.loads(l)["resumed_from"] for l in sys.stdin if "\"start\"" in l and "\"resumed_from\": null" not in l}))')
[ "$resumed" = "[$b1]" ] || fail "B's task 2 resumed from $resumed, not from the committed save at $b1"
scancel "$b"
both_gone() { array_gone "$a" && array_gone "$b"; }
wait_for 60 "both arrays to end" both_gone
report=$("$BUILD/bin/trainctl" report --no-svg "$b") || fail "trainctl report $b failed: $report"
grep -qE "save at step $b2 \(deadline, [0-9.]+s blocking, cut after [0-9.ms]+ of writing: the job's end\)" <<<"$report" ||
  fail "the report does not name the save the job's end cut: $report"
grep -qE "save at step $b1 \(save-switch, [0-9.ms]+ blocking, [0-9.ms]+ to commit\)" <<<"$report" ||
  fail "the report does not show the save-switch save's blocking part and time to commit: $report"
log "(3) the report: $(grep -oE "save at step $b2 \([^)]*\)" <<<"$report")"
log "PASS"
