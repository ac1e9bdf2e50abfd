#!/usr/bin/env bash
# e2e-modes: run plugin
# e2e-core: plugin run
# `scontrol update TimeLimit=` (a decrease) mid-run moves the notice: with --time=5 and
# a graceful exit of 1 minute the ranks would exit at 4 min; after the limit drops to
# 2 min they exit at about 1 min. The supervisor re-reads EndTime every endtime_poll
# (10 s on the test cluster, 5 min by default: 12 queries per node per hour). The
# plugin reads it through libslurm; trainctl-run here through scontrol, the way a node
# without libslurm does (TRAINCTL_NO_LIBSLURM), so both paths move the deadline.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

extra=()
[ "$MODE" = run ] && extra=(--endtime-poll=10s)
[ "$MODE" = run ] && export TRAINCTL_NO_LIBSLURM=1
supervised_job "$TEST_DIR/job.sh" --graceful-exit=1 "${extra[@]}"
job=$(submit -N2 --ntasks-per-node=1 --time=5 "${JOB_OPTS[@]}" -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job ($MODE), time limit 5 min, graceful exit 1 min"
wait_for 120 "4 ranks started" events_at_least start 4
start=$(job_field "$job" StartTime)
scontrol update JobId="$job" TimeLimit=2 || fail "scontrol update refused"
log "TimeLimit lowered to 2 min: EndTime $(job_field "$job" EndTime)"
wait_for 100 "4 ranks to exit" events_at_least exit 4
read -r n steps reasons < <(exit_summary)
{ [ "$n" = 4 ] && [ "$steps" = 1 ]; } || fail "expected 4 ranks to exit at one step; got $n at $steps steps"
[ "$reasons" = deadline ] || fail "expected reason deadline, got '$reasons'"
offset=$(first_exit_after "$start")
python3 -c 'import sys; sys.exit(0 if 55 <= float(sys.argv[1]) <= 80 else 1)' "$offset" || fail "exit at $offset s, not about 60 s"
wait_for 60 "the job to end" job_ended "$job"
[ "$(job_state "$job")" = COMPLETED ] || fail "job ended $(job_state "$job")"
if [ "$MODE" = run ]; then
  grep -q 'EndTime is read through scontrol' "$TEST_DIR/job.out" || fail "trainctl-run did not say it reads EndTime through scontrol"
else
  ! grep -q 'EndTime is read through scontrol' "$TEST_DIR/job.out" || fail "the plugin's supervisors fell back to scontrol"
fi
log "PASS: the lowered limit moved the exit to $offset s after the start (reason deadline); COMPLETED"
