#!/usr/bin/env bash
# e2e-modes: run plugin
# e2e-core: plugin
# --time=2 with a graceful exit of 1 minute: about 60 s in, every rank gets the notice
# (reason deadline), saves and exits 0; the job ends COMPLETED, not TIMEOUT.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

supervised_job "$TEST_DIR/job.sh" --graceful-exit=1
job=$(submit -N2 --ntasks-per-node=1 --time=2 "${JOB_OPTS[@]}" -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job ($MODE), time limit 2 min, graceful exit 1 min"
wait_for 120 "4 ranks started" events_at_least start 4
start=$(job_field "$job" StartTime)
wait_for 110 "the job to end" job_ended "$job"
read -r n steps reasons < <(exit_summary)
[ "$(job_state "$job")" = COMPLETED ] || fail "job ended $(job_state "$job"), not COMPLETED"
{ [ "$n" = 4 ] && [ "$steps" = 1 ]; } || fail "expected 4 ranks to exit at one step; got $n at $steps steps"
[ "$reasons" = deadline ] || fail "expected reason deadline, got '$reasons'"
offset=$(first_exit_after "$start")
log "PASS: ranks exited $offset s after the job started (deadline at 60 s), reason deadline; COMPLETED"
python3 -c 'import sys; sys.exit(0 if 55 <= float(sys.argv[1]) <= 75 else 1)' "$offset" || fail "exit at $offset s, not about 60 s"
