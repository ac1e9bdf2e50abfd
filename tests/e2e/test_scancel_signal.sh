#!/usr/bin/env bash
# e2e-modes: run plugin
# e2e-variants: linuxproc cgroup
# e2e-core: plugin_cgroup
# e2e-torch: torchrun's own signal handling: a USR1 to every process of the step leaves its agent running
# `scancel --signal=USR1` mid-run with torchrun under the supervisor (trainctl-run or
# the plugin): the launchers survive, all 4 ranks save at one step and exit, srun exits 0, the job is COMPLETED.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

supervised_job "$TEST_DIR/job.sh" --kill-switch="$TEST_DIR/KILL"
job=$(submit -N2 --ntasks-per-node=1 --time=10 "${JOB_OPTS[@]}" -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job"
wait_for 120 "4 ranks started" events_at_least start 4
wait_for 60 "the ranks past step 20" ranks_past "$job" 4 20
log "scancel --signal=USR1 $job"
scancel --signal=USR1 "$job"
wait_for 60 "the job to end" job_ended "$job"
read -r n steps reasons < <(exit_summary)
[ "$(job_state "$job")" = COMPLETED ] || fail "job ended $(job_state "$job"), not COMPLETED"
{ [ "$n" = 4 ] && [ "$steps" = 1 ]; } || fail "expected 4 ranks to exit at one step; got $n ranks at $steps steps"
srun_rc=$(job_field "$job" ExitCode)
[ "$srun_rc" = 0:0 ] || fail "the job's exit code is $srun_rc, not 0:0"
[ "$reasons" = signal ] || fail "expected reason 'signal', got '$reasons'"
[ "$(events_count save)" -eq 4 ] || fail "expected 4 saves, got $(events_count save)"
grep -q "received SIGUSR1" "$TEST_DIR/job.out" || fail "the supervisor did not log the notice"
sleep 1
left=$(pgrep -f "$TEST_DIR" || true)
[ -z "$left" ] || fail "processes left behind after the step: $(ps -o pid,args -p "${left//$'\n'/,}")"
log "PASS: 4 ranks saved and exited at one step (reason $reasons); job COMPLETED"
