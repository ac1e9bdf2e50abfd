#!/usr/bin/env bash
# e2e-modes: run
# The node state removed while the job runs, as systemd-logind's RemoveIPC=yes does when
# the user's last login session on the node ends (it removes the user's /dev/shm files:
# trainctl-run's node state, where the plugin's /run/trainctl is not used), then a worker
# dies and torchrun restarts the node's workers. Before, the new workers made a new state
# that nobody published: they missed the save and kill switches (issue 34: 82.6 s past the
# kill switch, until the deadline). Now: the supervisor says the file was removed, the new
# workers share its open copy and say so, one save-switch touch gives one save on each new
# worker, and the kill switch ends the job, COMPLETED.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

run_as_user tcremoved
as_user mkdir -p "$TEST_DIR/events"
LAUNCHER_ARGS=--max_restarts=1 supervised_job "$TEST_DIR/job.sh" --kill-switch="$TEST_DIR/KILL" \
  --save-switch="$TEST_DIR/SAVE" --poll-interval=1s
chmod 755 "$TEST_DIR/job.sh"
job=$(submit_as_user -N1 --time=5 -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "job $job submitted as $TEST_USER: torchrun, 2 workers, one restart allowed"
wait_for 120 "2 workers started" events_at_least start 2
wait_for 60 "the workers past step 20" ranks_past "$job" 2 20

dir=/dev/shm/trainctl-$TEST_UID
node=$(squeue -h -j "$job" -o %N)  # beside other tests the job may run on any node
[ -f "$dir/$job.0-$node" ] || fail "no node state $dir/$job.0-$node: $(ls -la "$dir" 2>&1)"
as_user rm -rf "$dir"
log "removed $dir, as RemoveIPC does"
wait_for 30 "the supervisor to say the state was removed" grep -q "node state $dir/$job.0-$node was removed" "$TEST_DIR/job.out"

# A worker, not the launcher's agent (whose command line names the script too).
worker=""
for p in $(pgrep -u "$TEST_USER" -f "train_example.py" || true); do
  if ! grep -q "$LAUNCHER_SCRIPT" "/proc/$p/cmdline" 2>/dev/null; then
    worker=$p
    break
  fi
done
[ -n "$worker" ] || fail "no worker process"
kill -9 "$worker"
log "killed worker pid $worker: torchrun restarts the workers"
wait_for 120 "2 restarted workers started" events_at_least start 4
wait_for 30 "the restarted workers to find the supervisor's copy" \
  bash -c "[ \$(grep -c 'shares its supervisor.s open copy' '$TEST_DIR/job.out') -ge 2 ]"

as_user touch "$TEST_DIR/SAVE"
log "touched the save switch"
saves() { cat "$TEST_DIR"/events/rank*.jsonl | grep '"event": "save"' | grep -c '"save-switch"' || true; }
saves_at_least() { [ "$(saves)" -ge "$1" ]; }
wait_for 30 "a save on each restarted worker" saves_at_least 2
as_user touch "$TEST_DIR/KILL"
log "touched the kill switch"
wait_for 60 "the job to end" job_ended "$job"
[ "$(job_state "$job")" = COMPLETED ] || fail "the job ended $(job_state "$job")"
[ "$(saves)" = 2 ] || fail "$(saves) saves for one touch on 2 workers"
kills=$(cat "$TEST_DIR"/events/rank*.jsonl | grep '"event": "exit"' | grep -c '"kill-switch"' || true)
[ "$kills" = 2 ] || fail "$kills of 2 restarted workers exited at the kill switch"
log "PASS: the removed state was found again by the restarted workers; the save and kill switches reached them"
