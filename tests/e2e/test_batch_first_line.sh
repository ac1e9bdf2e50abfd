#!/usr/bin/env bash
# e2e-core: all
# A batch script that puts itself under trainctl-run with its first line, as `man
# trainctl-run` prints it (the line is taken from the built man page, not copied here),
# as an unprivileged user, without the plugin:
#   1. the script's body runs once, supervised: TRAINCTL_SUPERVISED names its job;
#   2. the next link of a chain, submitted from inside that job (sbatch hands the job's
#      environment on), is supervised by its own trainctl-run, not taken for supervised;
#   3. under the SPANK plugin (--graceful-exit on sbatch), the same line adds no second
#      supervisor: the body runs once under the plugin's;
#   4. the line without its guard ends with trainctl-run's one line naming the guard and
#      exit status 125, instead of starting itself forever.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

run_as_user tcbatch
page=$BUILD/man/trainctl-run.1
[ -f "$page" ] || fail "no built man page $page"
line=$(grep -m 1 'exec trainctl-run --batch' "$page" | sed 's/ *# .*$//')
[ -n "$line" ] || fail "man trainctl-run shows no line with 'exec trainctl-run --batch'"
log "the man page's first line: $line"

# write_script FILE FIRST-LINE: a batch script whose body says what it runs under and,
# with NEXT=1, submits itself once more from inside the job (the chain's next link).
write_script() {
  cat >"$1" <<JOB
#!/bin/bash
$2
echo "body: job \$SLURM_JOB_ID, TRAINCTL_SUPERVISED=\${TRAINCTL_SUPERVISED:-} supervisor=\$(ps -o comm= -p "\${TRAINCTL_SUPERVISOR_PID:-1}")"
if [ "\${NEXT:-}" = 1 ]; then
  echo "next: \$(NEXT=0 sbatch --parsable -J batchline-next -o "$TEST_DIR/next.out" "$1")"
fi
JOB
  chown "$TEST_USER" "$1"
}
write_script "$TEST_DIR/guarded.sh" "$line"
# What the user's shell has: trainctl-run on PATH (the installed one, or the venv's).
as_user_path() { PATH="$BUILD/bin:$PATH" as_user "$@"; }

# --- 1 and 2: without the plugin ------------------------------------------------------
plain=$CLUSTER_ETC/without-plugin/slurm.conf
job=$(id=$(as_user_path env SLURM_CONF="$plain" NEXT=1 sbatch --parsable -J batchline -o "$TEST_DIR/first.out" \
  "$TEST_DIR/guarded.sh") && echo "${id%%;*}") || fail "sbatch of the man page's script was refused"
echo "$job" >>"$TEST_DIR/.submitted"
wait_for 60 "job $job to end" job_ended "$job"
next_submitted() { grep -q '^next: [0-9]' "$TEST_DIR/first.out"; }
wait_for 10 "job $job to say which job it submitted" next_submitted
next=$(sed -n 's/^next: \([0-9]*\).*/\1/p' "$TEST_DIR/first.out")
echo "$next" >>"$TEST_DIR/.submitted"
[ "$(job_state "$job")" = COMPLETED ] || fail "job $job ended $(job_state "$job"): $(cat "$TEST_DIR/first.out")"
[ "$(grep -c '^body:' "$TEST_DIR/first.out")" = 1 ] || fail "the body did not run once: $(cat "$TEST_DIR/first.out")"
grep -q "^body: job $job, TRAINCTL_SUPERVISED=$job supervisor=trainctl-run$" "$TEST_DIR/first.out" ||
  fail "job $job did not run its body under trainctl-run: $(cat "$TEST_DIR/first.out")"
log "job $job ran its body once, under trainctl-run (TRAINCTL_SUPERVISED=$job)"
wait_for 60 "the chain's next job $next to end" job_ended "$next"
[ "$(job_state "$next")" = COMPLETED ] || fail "job $next ended $(job_state "$next"): $(cat "$TEST_DIR/next.out")"
grep -q "^body: job $next, TRAINCTL_SUPERVISED=$next supervisor=trainctl-run$" "$TEST_DIR/next.out" ||
  fail "job $next, submitted from inside job $job, is not supervised by its own trainctl-run: $(cat "$TEST_DIR/next.out")"
log "job $next, submitted from inside job $job, runs under its own trainctl-run"

# --- 3: under the plugin ----------------------------------------------------------------
job=$(id=$(as_user_path sbatch --parsable --graceful-exit=1 -J batchline-plugin -o "$TEST_DIR/plugin.out" \
  "$TEST_DIR/guarded.sh") && echo "${id%%;*}") || fail "sbatch --graceful-exit=1 of the script was refused"
echo "$job" >>"$TEST_DIR/.submitted"
wait_for 60 "job $job to end" job_ended "$job"
[ "$(job_state "$job")" = COMPLETED ] || fail "job $job ended $(job_state "$job"): $(cat "$TEST_DIR/plugin.out")"
[ "$(grep -c '^body:' "$TEST_DIR/plugin.out")" = 1 ] || fail "the body did not run once: $(cat "$TEST_DIR/plugin.out")"
grep -q "^body: job $job, TRAINCTL_SUPERVISED=$job supervisor=trainctl-run$" "$TEST_DIR/plugin.out" ||
  fail "under the plugin, job $job did not run its body under one supervisor: $(cat "$TEST_DIR/plugin.out")"
! grep -q "already runs under trainctl-run" "$TEST_DIR/plugin.out" ||
  fail "under the plugin the guarded line still started trainctl-run: $(cat "$TEST_DIR/plugin.out")"
log "under the plugin, job $job ran its body once under the plugin's supervisor"

# --- 4: the line without its guard ------------------------------------------------------
# shellcheck disable=SC2016  # the line as a user writes it, expanded when the job runs
write_script "$TEST_DIR/unguarded.sh" 'exec trainctl-run --batch -- "$0" "$@"'
job=$(id=$(as_user_path env SLURM_CONF="$plain" sbatch --parsable -J batchline-loop -o "$TEST_DIR/loop.out" \
  "$TEST_DIR/unguarded.sh") && echo "${id%%;*}") || fail "sbatch of the unguarded script was refused"
echo "$job" >>"$TEST_DIR/.submitted"
wait_for 60 "job $job to end" job_ended "$job"
[ "$(job_field "$job" ExitCode)" = 125:0 ] || fail "the unguarded script's job ended $(job_field "$job" ExitCode): $(cat "$TEST_DIR/loop.out")"
grep -qF "needs the guard in front of it" "$TEST_DIR/loop.out" || fail "no line named the guard: $(cat "$TEST_DIR/loop.out")"
guard=${line%%||*}
grep -qF "  $guard|| exec trainctl-run --batch" "$TEST_DIR/loop.out" ||
  fail "the advice is not the man page's guard ($guard): $(cat "$TEST_DIR/loop.out")"
! grep -q '^body:' "$TEST_DIR/loop.out" || fail "the unguarded script's body ran: $(cat "$TEST_DIR/loop.out")"
log "without its guard the line ended the job with exit 125 and named the guard"
log "PASS: the man page's first line runs its script once, under one supervisor, also in a chain and under the plugin"
