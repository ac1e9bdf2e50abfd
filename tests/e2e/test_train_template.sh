#!/usr/bin/env bash
# e2e-torch: the template as users run it, under real torchrun
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
template_deadline_then_resume "$ev"
log "touching the default kill switch"
touch "$TEST_DIR/kill-switch-tmpl"
all_done() { [ -z "$(squeue -h -j "$job" 2>/dev/null)" ]; }
wait_for 120 "the array to end" all_done
[ "$(template_events_count "$ev" exit)" -eq 8 ] || fail "task 2 did not exit on the kill switch"
[ "$(template_events_count "$ev" start)" -eq 8 ] || fail "tasks 3 or 4 started training"
for t in 3 4; do
  run=$(job_field "${job}_$t" RunTime)
  secs=$(python3 -c 'import sys; h,m,s=(["0"]*3+sys.argv[1].split(":"))[-3:]; print(int(h)*3600+int(m)*60+int(s))' "$run")
  [ "$secs" -lt 5 ] || fail "task $t ran ${secs}s"
done
grep -q "supervised by trainctl-run" "$TEST_DIR"/tmpl-*.out || fail "the template did not say which supervisor it used"
log "PASS: deadline in task 1, resume in task 2, kill switch ended tasks 3 and 4 at once"
