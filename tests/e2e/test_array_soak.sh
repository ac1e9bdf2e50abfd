#!/usr/bin/env bash
# e2e-modes: plugin
# The soak: a 10-task array (--array=1-10%1), each task with a 1-minute limit and a
# 30-second graceful exit (30 s to train: a loaded machine can take 20 to start torch),
# resuming from the last task's checkpoint, as an unprivileged user, with trainctl's own
# parts failing in three of the tasks: task 3's supervisor is killed (kill -9), task 6's
# node state is truncated (each once the task trains, or 8 s before its deadline), task
# 8's supervisors are stopped from their start to 10 s past the deadline. Every task must
# end with a save, and the next must start at the step after it: 0 lost steps. Nothing
# of the user's is left at the end.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

run_as_user tcsoak
export TRAINCTL_POLL_INTERVAL=1s

as_user mkdir -p "$TEST_DIR/events"
cat >"$TEST_DIR/job.sh" <<JOB
#!/bin/bash
srun --ntasks=2 /usr/bin/python3 $TRAIN --ckpt-dir $TEST_DIR/ckpt --steps 1000000 \
  --events "$TEST_DIR/events/rank{rank}.jsonl"
JOB
chmod 755 "$TEST_DIR/job.sh"
arr=$(submit_as_user --array=1-10%1 -N1 --ntasks=2 --time=1 --graceful-exit=30s \
  --kill-switch="$TEST_DIR/KILL" --save-switch="$TEST_DIR/SAVE" -o "$TEST_DIR/task-%a.out" "$TEST_DIR/job.sh")
log "array $arr submitted as $TEST_USER: 10 tasks, 1 minute each, graceful exit 30 s"

starts() {
  local n
  n=$(grep -c '"event": "start"' "$TEST_DIR/events/rank0.jsonl" 2>/dev/null) || true
  echo "${n:-0}"
}
started_at_least() { [ "$(starts)" -ge "$1" ]; }
array_done() { [ -z "$(squeue -h -r -j "$arr" 2>/dev/null)" ]; }
# supervisors_of TASK: the step supervisors of that array task (both tasks of step 0).
supervisors_of() {
  local p env
  for p in $(pgrep -u "$TEST_USER" -f 'trainctl-run' || true); do
    env=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) || continue
    grep -qx "SLURM_ARRAY_JOB_ID=$arr" <<<"$env" && grep -qx "SLURM_ARRAY_TASK_ID=$1" <<<"$env" &&
      grep -qx "SLURM_STEP_ID=0" <<<"$env" && echo "$p"
  done
  return 0
}

# deadline_of TASK: the deadline its publishing supervisor names in its first line.
deadline_of() { sed -n 's/.*: deadline \([0-9T:-]*\) (EndTime.*/\1/p' "$TEST_DIR/task-$1.out" 2>/dev/null | head -n 1; }
# ready_for_fault TASK: it trains, or its deadline is 8 s away (a loaded machine can take
# longer than the 30 s to start torch): either way its processes run until the deadline.
ready_for_fault() {
  started_at_least "$1" && return 0
  local dl
  dl=$(deadline_of "$1")
  [ -n "$dl" ] && [ $(($(date -d "$dl" +%s) - $(date +%s))) -le 8 ]
}
has_deadline() { [ -n "$(deadline_of "$1")" ]; }
two_supervisors() { [ "$(supervisors_of "$1" | wc -l)" -eq 2 ]; }
for task in 3 6 8; do
  if [ "$task" = 8 ]; then
    # As soon as its supervisors know the deadline, whether or not torch has started.
    wait_for 400 "task 8's supervisors to name its deadline" has_deadline 8
  else
    wait_for 400 "task $task to train or to near its deadline" ready_for_fault "$task"
    sleep 1
  fi
  wait_for 60 "task $task's two step supervisors" two_supervisors "$task"
  mapfile -t sups < <(supervisors_of "$task")
  [ "${#sups[@]}" = 2 ] || fail "task $task: found ${#sups[@]} step supervisors, not 2"
  case $task in
    3)
      kill -9 "${sups[0]}" || fail "task 3: its supervisor ${sups[0]} had ended before the fault (deadline passed?)"
      log "task 3: killed supervisor ${sups[0]}"
      ;;
    6)
      # Where the plugin put the node state (/run/trainctl/<uid>, or /dev/shm where
      # that cannot be made): what it passed to the supervisor, never a guess.
      state=$(tr '\0' '\n' <"/proc/${sups[0]}/cmdline" | sed -n 's/^--state=//p')
      { [ -n "$state" ] && [ -f "$state" ]; } || fail "task 6: no node state named in the supervisor's arguments ($state)"
      as_user truncate -c -s 0 "$state"
      log "task 6: truncated its node state $state"
      ;;
    8)
      # To 10 s past its deadline: the notice is due while both are stopped.
      dl=$(deadline_of 8)
      left=$(($(date -d "$dl" +%s) + 10 - $(date +%s)))
      [ "$left" -gt 10 ] || fail "task 8's deadline ($dl) was named too late for the fault"
      kill -STOP "${sups[@]}"
      sleep "$left"
      kill -CONT "${sups[@]}"
      log "task 8: stopped both supervisors for $left s, to 10 s past the deadline ($dl)"
      ;;
  esac
done

wait_for 400 "the array to finish" array_done
python3 - "$TEST_DIR/events/rank0.jsonl" <<'PY' || fail "steps were lost: see above"
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
tasks, cur = [], None
for e in events:
    if e["event"] == "start":
        cur = {"start": e["step"], "saves": [], "exit": None}
        tasks.append(cur)
    elif e["event"] == "save":
        cur["saves"].append(e["step"])
    elif e["event"] == "exit":
        cur["exit"] = (e["step"], e["reason"])
lost, bad = 0, []
for i, t in enumerate(tasks):
    if t["exit"] is None or t["exit"][0] not in t["saves"]:
        bad.append("task %d ended without a save at its exit: %s" % (i + 1, t))
    if i + 1 < len(tasks):
        nxt = tasks[i + 1]["start"]
        last = t["exit"][0] if t["exit"] else max(t["saves"] or [t["start"] - 1])
        lost += max(0, nxt - 1 - last) if nxt <= last + 1 else 0
        if nxt != last + 1:
            bad.append("task %d resumed at %d, task %d ended at %d" % (i + 2, nxt, i + 1, last))
print("tasks:", len(tasks), "reasons:", ",".join(t["exit"][1] if t["exit"] else "none" for t in tasks),
      "lost steps:", lost)
if len(tasks) != 10:
    bad.append("%d tasks trained, not 10" % len(tasks))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PY
# The faults took: task 6's processes saw the truncated node state and said so.
grep -qE 'node state .* (was truncated|changed size)' "$TEST_DIR/task-6.out" ||
  fail "task 6's node state was not seen truncated: the fault did not take"
wait_for 30 "no process of $TEST_USER left" no_user_processes
log "PASS: 10 tasks through deadlines and three of trainctl's own faults, each ended with a save, 0 lost steps"
