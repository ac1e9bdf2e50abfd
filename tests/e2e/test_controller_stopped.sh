#!/usr/bin/env bash
# e2e-alone: it stops slurmctld, for every test, for up to a minute
# slurmctld stopped across the deadline, as an unprivileged user's job sees it: a task
# with --time=1 --graceful-exit=30s (deadline at 30 s), the controller stopped 15 s after
# the start: the rank still exits for the deadline on time (25-36 s), and the job ends
# once the controller is back. (A deadline at 60 s made this test, which runs alone,
# 30 s longer for nothing more.) Both ways at once, so that the cluster stops once: one job
# under trainctl-run, one under the plugin. Only under linuxproc: how slurmstepd tracks
# processes plays no part in a deadline without the controller.
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

opts="--graceful-exit=30s --kill-switch=$TEST_DIR/KILL --save-switch=$TEST_DIR/SAVE"
declare -A job
for mode in run plugin; do
  wrap=""
  [ "$mode" = run ] && wrap="$BUILD/bin/trainctl-run $opts --poll-interval=1s --endtime-poll=10s --"
  as_user mkdir -p "$TEST_DIR/$mode/events"
  cat >"$TEST_DIR/$mode/job.sh" <<JOB
#!/bin/bash
srun --ntasks=1 $wrap /usr/bin/python3 $TRAIN --ckpt-dir $TEST_DIR/$mode/ckpt --steps 1000000 \
  --events "$TEST_DIR/$mode/events/rank{rank}.jsonl"
JOB
  chmod 755 "$TEST_DIR/$mode/job.sh"
  plugin_opts=()
  [ "$mode" = plugin ] && read -ra plugin_opts <<<"$opts"
  job[$mode]=$(submit_as_user -N1 --ntasks=1 --time=1 "${plugin_opts[@]}" -o "$TEST_DIR/$mode/job.out" "$TEST_DIR/$mode/job.sh")
done
log "jobs ${job[run]} (run) and ${job[plugin]} (plugin): slurmctld will be stopped 15 s after the later start, across the deadlines at 30 s"
exits() { cat "$TEST_DIR"/"$1"/events/rank*.jsonl 2>/dev/null | grep -c '"event": "exit"' || true; }
started() { grep -qs '"event": "start"' "$TEST_DIR"/"$1"/events/rank*.jsonl; }
both_started() { started run && started plugin; }
wait_for 120 "both ranks to start" both_started
declare -A start
for mode in run plugin; do start[$mode]=$(job_field "${job[$mode]}" StartTime); done
since_start() {  # since_start UNIX_TIME MODE: seconds from that job's start
  python3 -c 'import sys,time; print(round(float(sys.argv[1]) - time.mktime(time.strptime(sys.argv[2], "%Y-%m-%dT%H:%M:%S")), 1))' "$1" "${start[$2]}"
}
later=run
[[ "${start[plugin]}" > "${start[run]}" ]] && later=plugin
until python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 15 else 1)' "$(since_start "$(date +%s.%N)" "$later")"; do sleep 1; done
for mode in run plugin; do
  early=$(since_start "$(date +%s.%N)" "$mode")
  python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 25 else 1)' "$early" ||
    fail "the $mode job started $early s before the stop: the two jobs started too far apart to share it"
done
kill -STOP "$ctld_pid"
log "slurmctld stopped 15 s after the later start"
for _ in $(seq 1 60); do [ "$(exits run)" -ge 1 ] && [ "$(exits plugin)" -ge 1 ] && break; sleep 1; done
resume_ctld
log "slurmctld resumed"
for mode in run plugin; do
  read -r why t < <(python3 -c 'import glob, json, sys
for f in glob.glob(sys.argv[1] + "/rank*.jsonl"):
    for line in open(f):
        e = json.loads(line)
        if e["event"] == "exit":
            print(e["reason"], e["time"])' "$TEST_DIR/$mode/events") || true
  [ "${why:-}" = deadline ] || fail "the $mode job's rank exited with '${why:-nothing}' while the controller was stopped"
  off=$(since_start "$t" "$mode")
  python3 -c 'import sys; sys.exit(0 if 25 <= float(sys.argv[1]) <= 36 else 1)' "$off" ||
    fail "the deadline (30 s) reached the $mode job's rank at $off s with the controller stopped"
  log "$mode: the rank exited at $off s (deadline at 30 s) while slurmctld was stopped"
  why="" t=""
done
for mode in run plugin; do wait_for 90 "job ${job[$mode]} to end" job_ended "${job[$mode]}"; done
log "PASS: under trainctl-run and under the plugin, the rank exited at the deadline while slurmctld was stopped"
