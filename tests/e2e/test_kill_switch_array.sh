#!/usr/bin/env bash
# e2e-modes: run plugin
# e2e-variants: linuxproc cgroup
# The kill switch with --array=1-5%1: the running task saves and exits; every later
# task ends within 5 s without starting training.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

supervised_job "$TEST_DIR/job.sh" --kill-switch="$TEST_DIR/KILL"
job=$(submit -N2 --ntasks-per-node=1 --time=10 --array=1-5%1 "${JOB_OPTS[@]}" -o "$TEST_DIR/job-%a.out" "$TEST_DIR/job.sh")
log "submitted array $job ($MODE)"
wait_for 120 "4 ranks of the first task started" events_at_least start 4
sleep 2
log "touch the kill switch"
touch "$TEST_DIR/KILL"
all_ended() { [ -z "$(squeue -h -j "$job" 2>/dev/null)" ]; }
wait_for 120 "the whole array to end" all_ended
read -r n steps reasons < <(exit_summary)
{ [ "$n" = 4 ] && [ "$steps" = 1 ] && [ "$reasons" = kill-switch ]; } || fail "first task: $n exits at $steps steps ($reasons)"
[ "$(events_count start)" -eq 4 ] || fail "later tasks started training: $(events_count start) starts"
for t in 2 3 4 5; do
  id="${job}_$t"
  state=$(job_state "$id")
  run=$(job_field "$id" RunTime)
  secs=$(python3 -c 'import sys; h,m,s=(["0"]*3+sys.argv[1].split(":"))[-3:]; print(int(h)*3600+int(m)*60+int(s))' "$run")
  log "task $t: $state in ${secs}s"
  [ "$state" = COMPLETED ] || fail "task $t ended $state"
  [ "$secs" -lt 5 ] || fail "task $t took ${secs}s"
done
log "PASS: first task exited on the kill switch; tasks 2-5 ended in < 5 s each"
