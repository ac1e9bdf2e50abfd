#!/usr/bin/env bash
# slurm_templates/train.slurm as users submit it, without the plugin (trainctl-run):
# `sbatch --array=1-4%1 --time=2`, graceful exit 1 minute. Task 1 reaches its deadline,
# every rank saves and exits; task 2 resumes at the saved step + 1; the kill switch
# (its default path) then stops task 2, and tasks 3 and 4 end at once.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
use_train_template "--steps 100000 --step-time 0.05"
job=$(submit --array=1-4%1 --time=2 -J tmpl train.slurm)
log "submitted the template as array $job"
ev=$TEST_DIR/logs/tmpl
count() { cat "$ev"/rank*.jsonl 2>/dev/null | grep -c "\"event\": \"$1\"" || true; }
at_least() { [ "$(count "$1")" -ge "$2" ]; }
wait_for 150 "task 1 to reach its deadline and exit" at_least exit 4
read -r n1 r1 s1 < <(python3 - "$ev" <<'PY'
import glob, json, sys
ex = [json.loads(l) for f in glob.glob(sys.argv[1] + "/rank*.jsonl") for l in open(f) if '"exit"' in l]
print(len(ex), ",".join(sorted({e["reason"] for e in ex})), max(e["step"] for e in ex))
PY
)
{ [ "$n1" = 4 ] && [ "$r1" = deadline ]; } || fail "task 1: $n1 exits, reasons $r1"
log "task 1: all 4 ranks saved and exited at step $s1 (deadline)"
wait_for 120 "task 2 to resume" at_least start 8
resumed=$(cat "$ev"/rank*.jsonl | python3 -c 'import json,sys; print(sorted({json.loads(l)["step"] for l in sys.stdin if "\"start\"" in l and "\"resumed_from\": null" not in l}))')
[ "$resumed" = "[$((s1 + 1))]" ] || fail "task 2 started at $resumed, not at $((s1 + 1))"
log "task 2 resumed at step $((s1 + 1)); touching the default kill switch"
touch "$TEST_DIR/kill-switch-tmpl"
all_done() { [ -z "$(squeue -h -j "$job" 2>/dev/null)" ]; }
wait_for 120 "the array to end" all_done
[ "$(count exit)" -eq 8 ] || fail "task 2 did not exit on the kill switch"
[ "$(count start)" -eq 8 ] || fail "tasks 3 or 4 started training"
for t in 3 4; do
  run=$(job_field "${job}_$t" RunTime)
  secs=$(python3 -c 'import sys; h,m,s=(["0"]*3+sys.argv[1].split(":"))[-3:]; print(int(h)*3600+int(m)*60+int(s))' "$run")
  [ "$secs" -lt 5 ] || fail "task $t ran ${secs}s"
done
grep -q "supervised by trainctl-run" "$TEST_DIR"/tmpl-*.out || fail "the template did not say which supervisor it used"
log "PASS: deadline in task 1, resume in task 2, kill switch ended tasks 3 and 4 at once"
