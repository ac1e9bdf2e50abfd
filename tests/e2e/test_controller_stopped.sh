#!/usr/bin/env bash
# e2e-modes: run plugin
# e2e-alone: it stops slurmctld, for every test, for up to a minute
# slurmctld stopped across the deadline, as an unprivileged user's job sees it: a task
# with --time=2 --graceful-exit=1 (deadline at 60 s), the controller stopped 30 s after
# the start: the rank still exits for the deadline on time (55-66 s), and the job ends
# once the controller is back. Only under linuxproc: how slurmstepd tracks processes
# plays no part in a deadline without the controller.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

run_as_user tcctld
export TRAINCTL_POLL_INTERVAL=1s
ctld_pid=$(cat "$CLUSTER_ETC/../run/slurmctld.pid")
resume_ctld() { kill -CONT "$ctld_pid" 2>/dev/null || true; }
on_exit() {
  local rc=$?
  resume_ctld
  set +e  # errexit would end this handler at the next line, before cleanup
  (exit "$rc")
  cleanup
}
trap on_exit EXIT

opts="--graceful-exit=1 --kill-switch=$TEST_DIR/KILL --save-switch=$TEST_DIR/SAVE"
wrap=""
[ "$MODE" = run ] && wrap="$BUILD/bin/trainctl-run $opts --poll-interval=1s --endtime-poll=10s --"
as_user mkdir -p "$TEST_DIR/events"
cat >"$TEST_DIR/job.sh" <<JOB
#!/bin/bash
srun --ntasks=1 $wrap /usr/bin/python3 $TRAIN --ckpt-dir $TEST_DIR/ckpt --steps 1000000 \
  --events "$TEST_DIR/events/rank{rank}.jsonl"
JOB
chmod 755 "$TEST_DIR/job.sh"
plugin_opts=()
[ "$MODE" = plugin ] && read -ra plugin_opts <<<"$opts"
job=$(submit_as_user -N1 --ntasks=1 --time=2 "${plugin_opts[@]}" -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "job $job ($MODE): slurmctld will be stopped 30 s after the start, across the deadline at 60 s"
wait_for 120 "the rank to start" events_at_least start 1
start=$(job_field "$job" StartTime)
since_start() { python3 -c 'import sys,time; print(round(float(sys.argv[1]) - time.mktime(time.strptime(sys.argv[2], "%Y-%m-%dT%H:%M:%S")), 1))' "$1" "$start"; }
until python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 30 else 1)' "$(since_start "$(date +%s.%N)")"; do sleep 1; done
kill -STOP "$ctld_pid"
log "slurmctld stopped 30 s after the start"
for _ in $(seq 1 60); do events_at_least exit 1 && break; sleep 1; done
resume_ctld
log "slurmctld resumed"
read -r why t < <(python3 -c 'import glob, json, sys
for f in glob.glob(sys.argv[1] + "/rank*.jsonl"):
    for line in open(f):
        e = json.loads(line)
        if e["event"] == "exit":
            print(e["reason"], e["time"])' "$TEST_DIR/events") || true
[ "${why:-}" = deadline ] || fail "the rank exited with '${why:-nothing}' while the controller was stopped"
off=$(since_start "$t")
python3 -c 'import sys; sys.exit(0 if 55 <= float(sys.argv[1]) <= 66 else 1)' "$off" ||
  fail "the deadline (60 s) reached the rank at $off s with the controller stopped"
wait_for 90 "the job to end" job_ended "$job"
log "PASS ($MODE): the rank exited at $off s (deadline at 60 s) while slurmctld was stopped"
