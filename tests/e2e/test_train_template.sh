#!/usr/bin/env bash
# e2e-variants: cgroup
# e2e-torch: the template as users run it, under real torchrun
# slurm_templates/train.slurm as users submit it, without the plugin (trainctl-run):
# `sbatch --array=1-4%1 --time=2`, graceful exit 1 minute. Task 1 reaches its deadline,
# every rank saves and exits; task 2 resumes at the saved step + 1; the kill switch
# (its default path) then stops task 2, and tasks 3 and 4 are held, not started; then
# `trainctl lint` finds the array by its job name and reads what it measured, and reads
# the program's own init_process_group timeout.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
use_train_template "--steps 100000 --step-time 0.05"
job=$(submit --array=1-4%1 --time=2 -J tmpl train.slurm)
log "submitted the template as array $job"
ev=$TEST_DIR/logs/tmpl
template_deadline_then_resume "$ev"
log "touching the default kill switch"
touch "$TEST_DIR/kill-switch-tmpl"
task2_done() { job_ended "${job}_2"; }
wait_for 120 "task 2 to end" task2_done
[ "$(template_events_count "$ev" exit)" -eq 8 ] || fail "task 2 did not exit on the kill switch"
[ "$(template_events_count "$ev" start)" -eq 8 ] || fail "tasks 3 or 4 started training"
# JobHeldAdmin where the job's user is root (this test's), JobHeldUser for everyone else.
held() { [ "$(squeue -h -r -j "$job" -t PENDING -o %r 2>/dev/null | grep -cE '^JobHeld(User|Admin)$')" = 2 ]; }
wait_for 30 "tasks 3 and 4 to be held" held
grep -q "kill switch $TEST_DIR/kill-switch-tmpl: the pending tasks of array $job (2) are held; to go on: rm " \
  "$TEST_DIR"/tmpl-*.out || fail "no task said that the array is held"
grep -q "supervised by trainctl-run" "$TEST_DIR"/tmpl-*.out || fail "the template did not say which supervisor it used"
# trainctl lint finds this array by its job name in sacct and reads what it measured.
lint_json=$TEST_DIR/lint.json
rc=0
trainctl lint --json train.slurm -J tmpl --array=1-4%1 --time=60 >"$lint_json" || rc=$?
[ "$rc" -eq 0 ] || fail "trainctl lint of the template with a 1-hour limit: exit $rc: $(cat "$lint_json")"
python3 - "$lint_json" "$job" <<'PY' || fail "trainctl lint did not read this array's figures: $(cat "$lint_json")"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["schema"] == 1 and doc["supervisor"] == "trainctl-run", doc
assert sys.argv[2] in doc["earlier_runs"], doc["earlier_runs"]
assert doc["measured"]["longest_start_ms"] > 0, doc["measured"]
assert doc["problems"] == [], doc["problems"]
PY
log "trainctl lint: array $job's figures read ($(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["measured"])' "$lint_json"))"
# A program whose init_process_group gives torch's collectives 5 minutes, under a
# 10-minute hang timeout: torch would end the ranks of a hung collective before trainctl
# takes their stacks. lint reads the program the template runs (TRAIN_SCRIPT) and says so.
cat >"$TEST_DIR/short_timeout.py" <<'PY'
import datetime
import torch.distributed as dist
dist.init_process_group("gloo", timeout=datetime.timedelta(minutes=5))
PY
rc=0
out=$(TRAIN_SCRIPT=$TEST_DIR/short_timeout.py HANG_TIMEOUT=10m trainctl lint train.slurm -J tmpl --time=60) || rc=$?
[ "$rc" -eq 1 ] || fail "trainctl lint passed a hang timeout past the program's collective timeout: exit $rc: $out"
grep -q "short_timeout.py:3 gives init_process_group, 5m: torch ends the ranks.*\[hang-after-collective-timeout\]" \
  <<<"$out" || fail "trainctl lint did not name the program's init_process_group timeout: $out"
log "trainctl lint: $(grep -o 'hang-timeout=10m is not shorter than[^:]*' <<<"$out")"
log "PASS: deadline in task 1, resume in task 2, the kill switch ended task 2 and held tasks 3 and 4; lint read the array's figures and the program's collective timeout"
