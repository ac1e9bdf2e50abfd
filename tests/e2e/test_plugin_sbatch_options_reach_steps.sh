#!/usr/bin/env bash
# Options given to sbatch apply to every srun step inside the script, also with
# srun --export=NONE; KILL_SWITCH and SAVE_SWITCH reach the batch script and the tasks.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
grep -q trainctl "$TRAINCTL_CLUSTER_PLUGSTACK" || fail "the plugin is not in plugstack.conf"

write_supervisor_probe "$TEST_DIR/parent.sh"
cat >"$TEST_DIR/job.sh" <<JOB
#!/bin/bash
echo "batch KILL_SWITCH=\$KILL_SWITCH SAVE_SWITCH=\$SAVE_SWITCH"
echo "batch supervisor: \$(source $TEST_DIR/parent.sh)"
srun -N1 bash -c 'echo "step1 KILL_SWITCH=\$KILL_SWITCH supervisor: \$(source $TEST_DIR/parent.sh)"'
srun -N1 --export=NONE /bin/bash -c 'echo "step2 KILL_SWITCH=\$KILL_SWITCH supervisor: \$(source $TEST_DIR/parent.sh)"'
JOB
# The default save switch lives in the directory sbatch was run from.
job=$(cd "$TEST_DIR" && submit -N1 --graceful-exit=5 --kill-switch="$TEST_DIR/KILL" --save-switch -J optjob \
  -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
wait_for 60 "the job to end" job_ended "$job"
cat "$TEST_DIR/job.out"
out=$TEST_DIR/job.out
grep -q "^batch KILL_SWITCH=$TEST_DIR/KILL SAVE_SWITCH=$TEST_DIR/save-switch-optjob$" "$out" || fail "batch script environment"
grep -q "^batch supervisor: .*trainctl-run .*--batch .*--graceful-exit=300000ms" "$out" || fail "batch step not supervised"
grep -q "^step1 KILL_SWITCH=$TEST_DIR/KILL supervisor: .*trainctl-run .*--graceful-exit=300000ms.*--save-switch=$TEST_DIR/save-switch-optjob " "$out" ||
  fail "step 1 did not get the options, or not the same default save switch"
grep -q "^step2 KILL_SWITCH=$TEST_DIR/KILL supervisor: .*trainctl-run .*--graceful-exit=300000ms" "$out" ||
  fail "srun --export=NONE lost the options or the environment"
log "PASS: sbatch's options and switch paths reach the batch script and every step, --export=NONE included"
