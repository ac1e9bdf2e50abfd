#!/usr/bin/env bash
# e2e-variants: cgroup
# trainwatch memory inside a job on the cgroup variant of the cluster: it finds the
# job's own cgroup (v1) and reports the tighter of its limit and the node. The local
# cluster does not count memory (CR_Core), so SLURM sets the job's limit to 8 % of the
# machine's RAM (MaxRAMPercent=8), which the machine's free memory may or may not be
# below; the fixture tests cover each case.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
job=$(submit -N1 --mem=300M -o "$TEST_DIR/mem.out" --wrap "$BUILD/bin/trainwatch memory --state-dir $TEST_DIR/state")
wait_for 60 "the job to end" job_ended "$job"
cat "$TEST_DIR/mem.out"
grep -qE "^MEMORY OK - .* in (node \(below )?cgroup v1 /slurm_n[0-9]/uid_[0-9]+/job_$job/step_batch" "$TEST_DIR/mem.out" ||
  fail "the job's cgroup was not found"
log "the job's cgroup is the memory domain trainwatch reads"

# --job, as the cron job runs it from whatever node it lands on: the training job's
# memory on each of its nodes (its job cgroup, through a helper step beside its steps),
# one result per node; a name no running job has is nothing to measure (OK: job-running
# is the check that alerts on a missing job).
train=$(submit -N2 --ntasks-per-node=1 --mem=300M --time=3 -J train-mem -o /dev/null --wrap "srun sleep 170")
wait_for 60 "the training job to run" bash -c "[ \"\$(squeue -h -j $train -o %T)\" = RUNNING ]"
mapfile -t nodes < <(scontrol show hostnames "$(squeue -h -j "$train" -o %N)")  # any 2 of the 3
[ "${#nodes[@]}" -eq 2 ] || fail "the training job runs on '${nodes[*]}', not 2 nodes"
set +e
out=$("$BUILD/bin/trainwatch" memory --job train-mem --state-dir "$TEST_DIR/state" 2>&1)
rc=$?
none=$("$BUILD/bin/trainwatch" memory --job no-such-job --state-dir "$TEST_DIR/state" 2>&1)
rc_none=$?
set -e
scancel "$train"
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || fail "memory --job exited $rc: $out"
for n in "${nodes[@]}"; do
  grep -qE "^MEMORY OK - train-mem on $n \(job $train\): .* in (node \(below )?cgroup v1 /slurm_$n/uid_[0-9]+/job_$train\)? \|" <<<"$out" ||
    fail "no reading of job $train's cgroup on $n"
done
if grep -q "step_" <<<"$out"; then fail "a step's cgroup was read, not the job's: $out"; fi
{ [ "$rc_none" -eq 0 ] && grep -q "no running job of yours named no-such-job: nothing to measure" <<<"$none"; } ||
  fail "a job that does not run: exit $rc_none, '$none'"
log "PASS: the job's cgroup is the memory domain trainwatch reads, in the job and from outside it (--job)"
