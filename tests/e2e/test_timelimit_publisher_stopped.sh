#!/usr/bin/env bash
# e2e-modes: run
# The TimeLimit is raised while one node's supervisor is stopped (SIGSTOP: swapped out,
# a stat stuck on a dead mount): issue 34, item 7. 2 nodes x 2 ranks, --time=3 and a
# graceful exit of 1 min (deadline at 120 s); n1's supervisor, the node's publisher, is
# stopped once the ranks run (10 s, later under load) and a rank of n1 takes its role
# over; the limit is raised to 4 min (deadline at 180 s), which only n2's supervisor
# reads. Before, n1's ranks fired the old deadline and the whole job exited a minute
# early. Now the latest EndTime read rides in the ranks' agreement: n1's ranks move their
# deadline with it, nobody exits at 120 s; n1's supervisor, let go at 130 s, takes the
# new EndTime from the node state instead of firing the old deadline; all 4 ranks exit
# at 180 s (deadline). The old deadline is 2 minutes in, not 1: under the test command's
# load torch took 26 s to start (CI, trixie), and the take-over, the raise and the agreement must all
# come before the old deadline.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

export TRAINCTL_POLL_INTERVAL=1s
supervised_job "$TEST_DIR/job.sh" --graceful-exit=1 --endtime-poll=10s --poll-interval=1s
job=$(submit -N2 --ntasks-per-node=1 --time=3 "${JOB_OPTS[@]}" -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job: time limit 3 min, graceful exit 1 min (deadline at 120 s)"
stopped=""
on_exit() {
  local rc=$?
  [ -n "$stopped" ] && kill -CONT "$stopped" 2>/dev/null
  set +e  # errexit would end this handler at the next line, before cleanup
  (exit "$rc")
  cleanup
}
trap on_exit EXIT
# supervisor_of NODE: the pid of the trainctl-run of this job's step 0 on NODE (by its
# environment; the batch step has one too where the cluster's plugin supervises it).
supervisor_of() {
  local p env
  for p in $(pgrep -f "^$BUILD/bin/trainctl-run " || true); do
    env=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) || continue
    if grep -qx "SLURM_JOB_ID=$job" <<<"$env" && grep -qx "SLURM_STEP_ID=0" <<<"$env" &&
      grep -qx "SLURMD_NODENAME=$1" <<<"$env"; then
      echo "$p"
      return 0
    fi
  done
  return 1
}
# Seconds since the job's StartTime (local time, as SLURM prints it), by date(1): these
# poll every half second, beside the ranks.
ms_since_start() { echo $(($(date +%s%3N) - start_ms)); }
since_start() {
  local ms
  ms=$(ms_since_start)
  echo "$((ms / 1000)).$((ms % 1000 / 100))"
}
wait_since_start() { until [ "$(ms_since_start)" -ge $(($1 * 1000)) ]; do sleep 0.5; done; }

wait_for 120 "4 ranks started" events_at_least start 4
start=$(job_field "$job" StartTime)
start_ms=$(($(date -d "$start" +%s) * 1000))
# Beside other tests the job may get any two of n1-n3: "the first node" (task 0) and
# "the second" (task 1) below.
na=$(job_node "$job" 1) nb=$(job_node "$job" 2)
pid=$(supervisor_of "$na") || fail "no trainctl-run of job $job on $na"
wait_since_start 10
kill -STOP "$pid"
stopped=$pid
log "$na's supervisor (pid $pid) stopped at $(since_start) s"
took_over() { grep -q "rank [0-9]* (pid [0-9]*) publishes it from now on" "$TEST_DIR/job.out"; }
wait_for 30 "a rank of $na to take the publisher's role" took_over
scontrol update JobId="$job" TimeLimit=4 || fail "scontrol update refused"
log "TimeLimit raised to 4 min at $(since_start) s: EndTime $(job_field "$job" EndTime)"
n2_read() { grep -q "trainctl-run\[$nb task 1\]: EndTime moved" "$TEST_DIR/job.out"; }
wait_for 30 "$nb's supervisor to read the new EndTime" n2_read
carried() { grep -q "EndTime moved to .*: another node's supervisor read it at .*, before this node's did" "$TEST_DIR/job.out"; }
wait_for 30 "the agreement to carry it to $na's ranks" carried
wait_since_start 130
[ "$(events_count exit)" = 0 ] || fail "$(events_count exit) rank(s) exited by $(since_start) s: the old deadline (120 s) fired"
log "nobody exited at the old deadline (120 s); $na's supervisor let go at $(since_start) s"
kill -CONT "$pid"
stopped=""
sup_adopted() { grep -q "trainctl-run\[$na task 0\]: EndTime moved .* passed on by the ranks" "$TEST_DIR/job.out"; }
wait_for 20 "$na's supervisor to take the new EndTime from the node state" sup_adopted
wait_for 120 "4 ranks to exit" events_at_least exit 4
read -r n steps reasons < <(exit_summary)
{ [ "$n" = 4 ] && [ "$steps" = 1 ]; } || fail "expected 4 ranks to exit at one step; got $n at $steps steps"
[ "$reasons" = deadline ] || fail "expected reason deadline, got '$reasons'"
offset=$(first_exit_after "$start")
python3 -c 'import sys; sys.exit(0 if 175 <= float(sys.argv[1]) <= 195 else 1)' "$offset" ||
  fail "the ranks exited at $offset s, not at the raised deadline (180 s)"
wait_for 60 "the job to end" job_ended "$job"
[ "$(job_state "$job")" = COMPLETED ] || fail "job ended $(job_state "$job")"
grep -E "trainctl-run|trainctl: rank" "$TEST_DIR/job.out" | grep -E "EndTime|deadline|publish" >&2 || true
log "PASS: the raised TimeLimit reached the stopped node through the agreement; all 4 ranks exited at $offset s (deadline 180 s); COMPLETED"
