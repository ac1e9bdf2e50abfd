#!/usr/bin/env bash
# e2e-modes: run plugin
# --notice-signals=XCPU: a signal that is no notice by default reaches only the step's
# supervisors, and the ranks save and exit at one step as for TERM or USR1. Through trainctl-run's command line, and
# through the plugin's option and the argv it starts the supervisor with (one row of
# the option table serves both).
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

supervised_job "$TEST_DIR/job.sh" --kill-switch="$TEST_DIR/KILL" --notice-signals=XCPU
job=$(submit -N2 --ntasks-per-node=1 --time=10 "${JOB_OPTS[@]}" -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job"
wait_for 120 "4 ranks started" events_at_least start 4
wait_for 60 "the ranks past step 20" ranks_past "$job" 4 20

# The supervisors of this job's training step (one per node; with the plugin the batch
# step has its own, which has no ranks), by their command line: only they get it.
supervisors() {
  local pid args
  for pid in $(pgrep -x trainctl-run); do
    args=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || continue
    if grep -q -- "--kill-switch=$TEST_DIR/KILL" <<<"$args" && ! grep -q -- " --batch " <<<"$args"; then echo "$pid"; fi
  done
  return 0
}
pids=$(supervisors)
[ "$(wc -w <<<"$pids")" -eq 2 ] || fail "expected this job's 2 supervisors, found: ${pids:-none}"
log "kill -XCPU $(tr '\n' ' ' <<<"$pids")(the supervisors only)"
# shellcheck disable=SC2086 # one pid per word
kill -XCPU $pids
wait_for 60 "the job to end" job_ended "$job"
read -r n steps reasons < <(exit_summary)
[ "$(job_state "$job")" = COMPLETED ] || fail "job ended $(job_state "$job"), not COMPLETED: $(tail -5 "$TEST_DIR/job.out")"
{ [ "$n" = 4 ] && [ "$steps" = 1 ]; } || fail "expected 4 ranks to exit at one step; got $n ranks at $steps steps"
[ "$reasons" = signal ] || fail "expected reason 'signal', got '$reasons'"
[ "$(events_count save)" -eq 4 ] || fail "expected 4 saves, got $(events_count save)"
[ "$(grep -c "received SIGXCPU" "$TEST_DIR/job.out")" -eq 2 ] || fail "both supervisors should log the XCPU: $(grep -i xcpu "$TEST_DIR/job.out")"
log "PASS: XCPU to the supervisors, a notice by --notice-signals: 4 ranks saved and exited at one step (reason $reasons)"
