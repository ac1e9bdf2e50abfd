# shellcheck shell=bash
# What the ranks of the example training loop logged: their events (rank*.jsonl).
# Sourced by tests/e2e/lib.sh: functions only, nothing runs when it is sourced.

# events_count EVENT: how many lines of that event the ranks wrote so far.
# first_exit_after START: seconds (one decimal) from START, a SLURM timestamp such as
# the job's StartTime, to the first "exit" event of any rank in $TEST_DIR/events.
first_exit_after() {
  python3 -c 'import glob, json, sys, time
first = min(json.loads(l)["time"] for f in glob.glob(sys.argv[1] + "/events/*") for l in open(f) if "\"exit\"" in l)
print(round(first - time.mktime(time.strptime(sys.argv[2], "%Y-%m-%dT%H:%M:%S")), 1))' "$TEST_DIR" "$1"
}
events_count() { cat "$TEST_DIR"/events/rank*.jsonl 2>/dev/null | grep -c "\"event\": \"$1\"" || true; }
events_at_least() { [ "$(events_count "$1")" -ge "$2" ]; }

# template_events_count DIR EVENT: how many lines of EVENT the template's ranks wrote in
# DIR (its LOG_DIR); template_events_at_least DIR EVENT N.
template_events_count() { cat "$1"/rank*.jsonl 2>/dev/null | grep -c "\"event\": \"$2\"" || true; }
template_events_at_least() { [ "$(template_events_count "$1" "$2")" -ge "$3" ]; }
# template_deadline_then_resume DIR: the story of a template array with 4 ranks: task 1's
# ranks all save and exit at one step with reason deadline, and task 2 starts at the
# next step. Sets TASK1_STEP to that step.
template_deadline_then_resume() {
  local ev=$1 n1 r1 resumed
  wait_for 180 "task 1 to reach its deadline and exit" template_events_at_least "$ev" exit 4
  read -r n1 r1 TASK1_STEP < <(python3 - "$ev" <<'PY'
import glob, json, sys
ex = [json.loads(l) for f in glob.glob(sys.argv[1] + "/rank*.jsonl") for l in open(f) if '"exit"' in l]
print(len(ex), ",".join(sorted({e["reason"] for e in ex})), max(e["step"] for e in ex))
PY
  )
  { [ "$n1" = 4 ] && [ "$r1" = deadline ]; } || fail "task 1: $n1 exits, reasons $r1"
  log "task 1: all 4 ranks saved and exited at step $TASK1_STEP (deadline)"
  wait_for 150 "task 2 to resume" template_events_at_least "$ev" start 8
  resumed=$(cat "$ev"/rank*.jsonl | python3 -c 'import json,sys; print(sorted({json.loads(l)["step"] for l in sys.stdin if "\"start\"" in l and "\"resumed_from\": null" not in l}))')
  [ "$resumed" = "[$((TASK1_STEP + 1))]" ] || fail "task 2 started at $resumed, not at $((TASK1_STEP + 1))"
  log "task 2 resumed at step $((TASK1_STEP + 1))"
}

# The single reason every rank gave for exiting, and the number of ranks that exited.
exit_summary() {
  python3 - "$TEST_DIR" <<'PY'
import glob, json, sys
ex = [json.loads(l) for f in glob.glob(sys.argv[1] + "/events/rank*.jsonl") for l in open(f) if '"exit"' in l]
print(len(ex), len({e["step"] for e in ex}), ",".join(sorted({e["reason"] for e in ex})))
PY
}
