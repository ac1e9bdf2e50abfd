#!/usr/bin/env bash
# e2e-torch: the demo as a new user runs it (scripts/demo), with real torchrun
# README command 1, minus install and build: scripts/demo --no-setup on the running local
# cluster. The demo checks its own story (deadline, resume, save switch, kill switch
# through the array, cron chain, one mail) and exits non-zero when any part went otherwise.
# It is also train.slurm's test with the plugin (the other template tests use trainctl-run).
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
names="demo-train,demo-cron,cron-watch-job-running,cron-watch-log-stall,cron-watch-memory"
cancel_demo_jobs() { squeue -h -u "$(id -un)" -n "$names" -o %F | sort -u | xargs -r scancel 2>/dev/null || true; }
on_exit() {
  local rc=$?
  cancel_demo_jobs
  set +e  # errexit would end this handler at the next line, before cleanup
  (exit "$rc")
  cleanup
}
trap on_exit EXIT
rc=0
TRAINCTL_DEMO_DIR=$TEST_DIR/demo timeout 480 bash "$SRC/scripts/demo" --no-setup >"$TEST_DIR/demo.log" 2>&1 || rc=$?
cat "$TEST_DIR/demo.log"
[ "$rc" -eq 0 ] || fail "the demo failed (status $rc)"
# Its output is no terminal here: no escape codes in the log (bold only on a terminal).
if grep -q $'\033' "$TEST_DIR/demo.log"; then fail "the demo wrote escape codes into a log"; fi
grep -q 'job-running demo-train: CRITICAL' "$TEST_DIR"/demo/mailbox/*.eml || fail "no alert mail in the demo's mailbox"
grep -q "supervised by trainctl's SPANK plugin" "$TEST_DIR"/demo/project/demo-train-*.out ||
  fail "train.slurm did not say it ran under the plugin"
left=$(squeue -h -u "$(id -un)" -n "$names" -o '%i %j %T')
[ -z "$left" ] || fail "the demo left jobs behind: $left"
log "PASS: the demo told its whole story"
