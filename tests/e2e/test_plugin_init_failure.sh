#!/usr/bin/env bash
# e2e-core: all
# e2e-alone: it breaks the cluster's plugstack.conf for a while
# A plugin that cannot start fails the job and leaves the node in service. From SLURM
# 25.05 a required plugin whose slurm_spank_init fails drains the node (every user's
# jobs lose it) unless the plugin sets slurm_spank_init_failure_mode to
# ESPANK_JOB_FAILURE, which trainctl does. The failure here is a real misconfiguration:
# plugstack.conf names a supervisor that does not exist, and the plugin refuses to start
# in slurmstepd. (A second copy of the plugin with clashing options does not make it
# fail there: slurmstepd does not check clashes.) Before 25.05 the plugin does not fail
# its start (that would drain the node): the test says so and skips.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

version=$(sinfo -V | awk '{print $2}')
IFS=. read -r major minor _ <<<"$version"
if [ "$((major * 100 + minor))" -lt 2505 ]; then
  log "SKIP: SLURM $version has no slurm_spank_init_failure_mode (25.05 added it)"
  exit 77
fi
plug=$(grep -o '/[^ ]*trainctl_spank\.so' "$TRAINCTL_CLUSTER_PLUGSTACK" | head -1)
[ -n "$plug" ] || fail "the plugin is not in plugstack.conf"
grep -q slurm_spank_init_failure_mode < <(nm -D --defined-only "$plug") ||
  fail "$plug does not export slurm_spank_init_failure_mode"

# Submitted held while plugstack.conf is sound: sbatch reads it too.
node=n3
job=$(submit --hold -N1 -w "$node" -o "$TEST_DIR/job.out" --wrap 'echo the script ran')
PLUGSTACK_SAVED=$TEST_DIR/plugstack.conf.saved
cp "$TRAINCTL_CLUSTER_PLUGSTACK" "$PLUGSTACK_SAVED"
printf 'required %s supervisor=%s\n' "$plug" "$TEST_DIR/no-such-dir/trainctl-run" >"$TRAINCTL_CLUSTER_PLUGSTACK"
scontrol release "$job"

wait_for 90 "job $job to end" job_ended "$job"
state=$(job_state "$job")
node_state=$(sinfo -h -n "$node" -o '%t')
reason=$(scontrol show node "$node" | grep -o 'Reason=.*' || true)
log "job $job ended $state; node $node is $node_state ${reason:+($reason)}"
grep -q 'the script ran' "$TEST_DIR/job.out" 2>/dev/null && fail "the job ran although the plugin could not start"
case "$node_state" in
  *drain* | *drng* | down*) fail "node $node was taken out of service: $node_state $reason" ;;
esac
[ "$state" != COMPLETED ] || fail "the job ended COMPLETED"
log "PASS: the plugin's failed start failed job $job ($state); $node stays $node_state"
