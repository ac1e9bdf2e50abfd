#!/usr/bin/env bash
# e2e-variants: cgroup
# trainwatch memory inside a job on the cgroup variant of the cluster: it finds the
# job's own cgroup (v1) and reports the tighter of its limit and the node. The local
# cluster does not count memory (CR_Core), so SLURM sets the job's limit to the node's
# RAM and the node is the tighter; the fixture tests cover a limit below the node.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
job=$(submit -N1 --mem=300M -o "$TEST_DIR/mem.out" --wrap "$BUILD/bin/trainwatch memory --state-dir $TEST_DIR/state")
wait_for 60 "the job to end" job_ended "$job"
cat "$TEST_DIR/mem.out"
grep -qE "^MEMORY OK - .* in (node \(below )?cgroup v1 /slurm_n[0-9]/uid_[0-9]+/job_$job/step_batch" "$TEST_DIR/mem.out" ||
  fail "the job's cgroup was not found"
log "PASS: the job's cgroup is the memory domain trainwatch reads"
