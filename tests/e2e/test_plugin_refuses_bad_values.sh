#!/usr/bin/env bash
# Bad option values are refused at submission by srun, sbatch and salloc, with one
# line naming the option; nothing is submitted.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
grep -q trainctl "$TRAINCTL_CLUSTER_PLUGSTACK" || fail "the plugin is not in plugstack.conf"

# The job name is this test's own: other tests submit beside it.
name=refused-${TEST_DIR##*/}
check() {  # check COMMAND...: must fail with a trainctl line naming the option
  local out rc=0
  out=$("$@" 2>&1) || rc=$?
  [ "$rc" -ne 0 ] || fail "$* was accepted"
  grep -q "trainctl: --" <<<"$out" || fail "$* gave no trainctl line: $out"
  log "refused: $* -> $(grep 'trainctl: --' <<<"$out" | head -1)"
}
for bad in --graceful-exit=abc --graceful-exit=0 --graceful-exit=-5 --graceful-exit=99999h --graceful-signal=NOPE --graceful-signal=KILL; do
  check sbatch -J "$name" "$bad" --wrap true
  check srun -J "$name" -N1 "$bad" true
  check salloc -J "$name" -N1 "$bad" true
done
[ -z "$(squeue -h -n "$name" -o %i)" ] || fail "something was submitted: $(squeue -h -n "$name")"
sbatch --graceful-exit=90s --graceful-signal=USR2 --wrap true >/dev/null || fail "good values were refused"
log "PASS: every bad value refused by sbatch, srun and salloc; nothing submitted"
