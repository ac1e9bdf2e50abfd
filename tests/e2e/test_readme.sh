#!/usr/bin/env bash
# README.md's "Quick start for users, without root", as written: its command lines are
# read from README.md itself (not a copy) and typed, one at a time, into one bash of an
# unprivileged user with a fresh HOME and the wheel, on the local cluster without the
# plugin. What the test sets is the environment a user's cluster would give: no package
# index (PIP_NO_INDEX), the launcher (torchrun's process model, light_launcher.py: the
# venv has no torch), a 2-minute limit (SBATCH_TIMELIMIT) and a 1-minute graceful exit;
# the trial's lines ask 15 minutes, 3 of them graceful, and 6,000 steps: they are typed
# with this test's limits and more steps (trial()), and their own figures checked to fit.
#   install: the venv, pip install of the wheel named there, the tools, $share;
#   train:   the template and the example into ~/proj, trainctl lint (clean), trainctl drill (every event
#            ok: a save, a hang named, the deadline, the resume, a rank killed), sbatch of the trial (--array=1-5%1); the save
#            switch (4 ranks save at one step); task 1's deadline, task 2 resumes; the
#            kill switch in task 2 (its ranks save and exit, tasks 3-5 held, the log says
#            `rm ... && scontrol release JOB_[3-5]`); README's rm && release line with
#            the job's id: task 3 resumes from task 2's save;
#   watch:   the cron chain from $share with README's two watchdogs, its first tick runs
#            both against the training job, and both find it well (exit 0);
#   look:    README's `trainctl status`, `trainctl status JOB` and `trainctl report JOB`
#            lines, with this job's ids, print what README shows (the report: both tasks and
#            both interruptions, task 1's time limit resumed at its save);
#   faq:     every command line of docs/faq.md ('    $ ...'), in the same shell, exits 0;
#   torchrun: docs/torchrun.md's batch script (docs/users.md shows the same), saved as job.sh, with torchrun in the venv
#            (the light launcher, c10d rendezvous as the page writes it), and its command
#            lines: submitted, listed, a save, the kill switch (COMPLETED), and the job
#            submitted again resumes from that save.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

# readme_blocks: the indented command blocks of README's quick start, each line
# prefixed with its block's number (1, 2, ...).
readme_blocks() {
  awk '/^## Quick start for users, without root/ { on = 1; next }
       on && /^## / { exit }
       on && /^    / { if (!inblock) { n++; inblock = 1 } sub(/^    /, ""); print n "\t" $0; next }
       on { inblock = 0 }' "$SRC/README.md"
}
mapfile -t lines < <(readme_blocks)
block() { local l; for l in "${lines[@]}"; do [ "${l%%$'\t'*}" = "$1" ] && printf '%s\n' "${l#*$'\t'}"; done; }
mapfile -t install < <(block 1)
mapfile -t train < <(block 2)
mapfile -t watch < <(block 3)
mapfile -t look < <(for l in "${lines[@]}"; do printf '%s\n' "${l#*$'\t'}"; done | sed -n 's/^\$ //p')
# What this test knows how to wait for, line by line: a README that changes them fails
# here, saying which line to teach the test.
expect() {  # expect NAME INDEX PATTERN: line INDEX of block NAME matches PATTERN
  local -n b=$1
  [[ ${b[$2]:-} =~ $3 ]] || fail "README.md's quick start, block '$1' line $(($2 + 1)): '${b[$2]:-}' is not /$3/ (teach this test the new line)"
}
[ "${#install[@]}" -eq 4 ] || fail "README.md's quick start: the install block has ${#install[@]} lines, not 4"
expect install 1 '^pip install (trainctl-[^ ]+\.whl)'
wheel_name=$(sed -E 's/^pip install ([^ ]+).*/\1/' <<<"${install[1]}")
[ "${#train[@]}" -eq 9 ] || fail "README.md's quick start: the train block has ${#train[@]} lines, not 9"
expect train 3 '^trainctl lint train\.slurm --array=1-5%1 --time=15 --export=ALL,GRACEFUL_EXIT=3 '
expect train 4 '^trainctl drill train\.slurm '
expect train 5 '^sbatch --array=1-5%1 --time=15 --export=ALL,GRACEFUL_EXIT=3 train\.slurm --steps 6000 '
expect train 6 '^touch save-switch-train'
expect train 7 '^touch kill-switch-train'
expect train 8 '^rm kill-switch-train && scontrol release 4242_\[3-5\]'
# The trial as written finishes inside the limit it asks for: its steps at the example's
# step time take less than one task's 15 minutes less its 3-minute graceful exit. Here
# its limits are scaled to this test's (2 minutes, 1 minute's graceful exit) and its
# steps to more than the test's tasks train (they are ended by the deadline and switches).
step_time=$(sed -n 's/.*"--step-time", type=float, default=\([0-9.]*\),.*/\1/p' "$SRC/slurm_templates/train_example.py")
[ -n "$step_time" ] || fail "train_example.py's --step-time default was not found"
python3 -c "import sys; sys.exit(0 if 6000 * $step_time + 60 < (15 - 3) * 60 else 1)" ||
  fail "README's trial: 6000 steps of $step_time s and a minute's start do not fit a 15-minute task less 3 minutes"
trial() { local l=${1//--time=15/--time=2}; l=${l//GRACEFUL_EXIT=3/GRACEFUL_EXIT=1}; printf '%s' "${l//--steps 6000/--steps 100000}"; }
# docs/users.md's templates section shows README's lines: those run here.
while IFS= read -r l; do
  grep -qxF -- "$l" <<<"$(printf '%s\n' "${train[@]}")" || fail "docs/users.md's templates line is not README's (run here): $l"
done < <(awk '/^## The templates/ { on = 1; next } on && /^## / { exit } on && /^    / { sub(/^    /, ""); print }' "$SRC/docs/users.md")
[ "${#watch[@]}" -eq 4 ] || fail "README.md's quick start: the watch block has ${#watch[@]} lines, not 4"
expect watch 3 '^sbatch cron/cron-hourly\.slurm'
[ "${#look[@]}" -eq 3 ] || fail "README.md's quick start: ${#look[@]} '\$ trainctl' lines, not 3"
expect look 0 '^trainctl status +#'
expect look 1 '^trainctl status 1371 '
expect look 2 '^trainctl report 5175 '

# --- the wheel --------------------------------------------------------------------------
the_wheel
[ "$(basename "$WHEEL")" = "$wheel_name" ] || fail "README.md installs $wheel_name; scripts/package --wheel made $(basename "$WHEEL")"
run_as_user tcreadme
home=$TEST_DIR/home
mkdir -p "$home" && cp "$WHEEL" "$home/" && chown -R tcreadme "$home"

# --- the user's shell: one bash, fed README's lines -------------------------------------
shell_log=$TEST_DIR/shell.log
: >"$shell_log" && chown tcreadme "$shell_log"
coproc USER_SHELL {
  cd "$home" && exec runuser -u tcreadme -- env -i HOME="$home" PATH=/usr/bin:/bin LANG=C.UTF-8 USER=tcreadme \
    SLURM_CONF="$CLUSTER_ETC/without-plugin/slurm.conf" PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TORCHRUN="python3 $SRC/tests/e2e/light_launcher.py" RDZV=static GPUS_PER_NODE=2 GRACEFUL_EXIT=1 \
    SBATCH_TIMELIMIT=2 TRAIN_ARGS="--steps 100000 --step-time 0.05" bash --norc -s >>"$shell_log" 2>&1
}
typed=0
# type_line LINE: LINE into the user's shell; returns once it ran, failing the test unless it
# exited 0. Its output is in $shell_log, after the line itself (prefixed '$ ').
type_line() {  # type_line LINE [SECONDS: how long it may run, default 120]
  typed=$((typed + 1))
  printf '%s\n' "echo '\$ ${1//\'/\'\\\'\'}'" "$1" "echo \"@@ $typed rc=\$?\"" >&"${USER_SHELL[1]}"
  ran() { grep -q "^@@ $typed rc=" "$shell_log"; }
  wait_for "${2:-120}" "the user's shell to run: $1" ran
  grep -q "^@@ $typed rc=0$" "$shell_log" || { tail -n 20 "$shell_log"; fail "README's line failed: $1"; }
}
# submitted: the job id of the last "Submitted batch job N" in the user's shell.
submitted() { sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$shell_log" | tail -n 1; }
# script_block PAGE: the first indented "#!/bin/bash" block of PAGE, unindented.
script_block() { awk '/^    #!\/bin\/bash$/ { on = 1 } on && !/^    / { exit } on { sub(/^    /, ""); print }' "$1"; }
output_of() {  # output_of N: what the N-th typed line printed
  awk -v n="$1" '/^@@ [0-9]+ rc=/ { k++; next } k == n - 1 && !/^\$ / { print }' "$shell_log"
}

log "install: README's ${#install[@]} lines"
for l in "${install[@]}"; do type_line "$l"; done
# shellcheck disable=SC2016  # expanded in the user's shell
type_line 'echo "share=$share"'
share=$(sed -n 's/^share=//p' "$shell_log" | tail -n 1)
[ "$share" = "$home/trainctl-env/share/trainctl" ] || fail "README's \$share is '$share', not the venv's share/trainctl"
log "the venv's trainctl: $(grep -m 1 '^trainctl [0-9]' "$shell_log")"

log "train: README's ${#train[@]} lines, waiting between them for what each one says"
for i in 0 1 2; do type_line "${train[$i]}"; done
type_line "$(trial "${train[3]}")"  # trainctl lint: the copied template, with README's sbatch options, passes (exit 0)
grep -q "^train.slurm: no problem found (supervised by trainctl-run; partition " "$shell_log" ||
  fail "README's trainctl lint line did not find the template clean: $(tail -n 5 "$shell_log")"
log "lint: $(grep -m 1 '^train.slurm: no problem found' "$shell_log")"
# trainctl drill: the template rehearses clean as a user runs it (the drill's own tasks,
# the light launcher as torchrun), every event ok, the stopped rank named, its files gone.
type_line "${train[4]}" 420
drill_out=$(output_of "$typed")
printf '%s\n' "$drill_out"
drill_array=$(sed -n 's/^trainctl drill: array \([0-9]*\) .*/\1/p' <<<"$drill_out")
echo "$drill_array" >>"$TEST_DIR/.submitted"
for event in start-up "save switch" hang notice resume "rank killed"; do
  grep -qE "^ok +$event " <<<"$drill_out" || fail "README's drill: the '$event' row is not ok: $drill_out"
done
grep -q "rank 1 stopped on .*the summary names it" <<<"$drill_out" || fail "README's drill: the stopped rank is not named"
grep -q "^verdict: ready for the long run$" <<<"$drill_out" || fail "README's drill: no clean verdict"
[ -z "$(squeue -h -r -j "$drill_array" 2>/dev/null)" ] || fail "README's drill left tasks of array $drill_array behind"
[ -z "$(find "$home/proj" -maxdepth 1 -name 'trainctl-drill-*')" ] || fail "README's drill left its directory behind"
[ -s "$home/.local/state/trainctl/save_times/name.train" ] || fail "README's drill kept no figures for jobs named train"
log "drill: $(grep -c '^ok ' <<<"$drill_out") events ok; $(grep '^the drill took' <<<"$drill_out")"
type_line "$(trial "${train[5]}")"
job=$(submitted)
[ -n "$job" ] || fail "README's sbatch line printed no job id: $(tail -n 3 "$shell_log")"
echo "$job" >>"$TEST_DIR/.submitted"
ev=$home/proj/logs/train
wait_for 120 "task 1's 4 ranks" template_events_at_least "$ev" start 4
log "array $job: task 1 runs"

type_line "${train[6]}"
saved() { [ "$(cat "$ev"/rank*.jsonl 2>/dev/null | grep -c '"why": "save-switch"')" -ge 4 ]; }
wait_for 60 "the 4 ranks' save-switch saves" saved
steps=$(cat "$ev"/rank*.jsonl | grep '"why": "save-switch"' | grep -o '"step": [0-9]*' | sort -u | wc -l)
[ "$steps" -eq 1 ] || fail "the save switch's saves were at $steps steps, not one"
log "save switch: the 4 ranks saved at one step"
template_deadline_then_resume "$ev"

type_line "${train[7]}"
killed() { [ "$(cat "$ev"/rank*.jsonl 2>/dev/null | grep -c '"reason": "kill-switch"')" -ge 4 ]; }
wait_for 60 "task 2's 4 ranks to exit on the kill switch" killed
held_line() { grep -h "the pending tasks of array $job (3) are held; to go on: rm " "$home"/proj/train-*.out 2>/dev/null | tail -n 1; }
has_held_line() { [ -n "$(held_line)" ]; }
wait_for 60 "task 2's log to say how to go on" has_held_line
said=$(held_line)
[[ $said == *"to go on: rm $home/proj/kill-switch-train && scontrol release ${job}_[3-5]" ]] ||
  fail "task 2's log does not give README's line for this job: $said"
task2_saved=$(cat "$ev"/rank*.jsonl | grep '"reason": "kill-switch"' | grep -o '"step": [0-9]*' | sort -u | cut -d' ' -f2)
[ "$(wc -l <<<"$task2_saved")" -eq 1 ] || fail "task 2's ranks exited at steps $task2_saved"
held() { [ "$(squeue -h -r -j "$job" -t PENDING -o %r | grep -c 'JobHeld')" -eq 3 ]; }
wait_for 30 "tasks 3-5 to be held" held
log "kill switch: task 2 saved at step $task2_saved; tasks 3-5 held; its log: ${said#*: }"

type_line "${train[8]//4242/$job}"
resumed() { grep -qE "\"event\": \"start\".*\"resumed_from\": ${task2_saved}[,}]" "$ev"/rank*.jsonl; }
wait_for 120 "task 3 to resume from task 2's save" resumed
log "README's release line: task 3 resumed from step $task2_saved"

log "watch: README's ${#watch[@]} lines (the cron chain beside the training, its task 3)"
for l in "${watch[@]}"; do type_line "$l"; done
chain=$(submitted)
[ "$chain" != "$job" ] || fail "README's cron sbatch line printed no job id"
echo "$chain" >>"$TEST_DIR/.submitted"
tick_out=$home/proj/cron-hourly-$chain.out
submitted_two() { grep -q "^cron-chain\[hourly\]: 2 job(s) submitted" "$tick_out" 2>/dev/null; }
wait_for 90 "the chain's first tick to submit its 2 jobs" submitted_two
mapfile -t watchers < <(sed -n 's/^cron-chain\[hourly\]: submitted \(watch-[a-z-]*\) as job \([0-9]*\)$/\1 \2/p' "$tick_out")
next_tick=$(sed -n 's/^cron-chain\[hourly\]: next tick queued as job \([0-9]*\),.*/\1/p' "$tick_out")
echo "$next_tick" >>"$TEST_DIR/.submitted"
[ "${#watchers[@]}" -eq 2 ] || fail "the tick submitted ${#watchers[@]} watchdogs: $(cat "$tick_out")"
for w in "${watchers[@]}"; do
  read -r name id <<<"$w"
  echo "$id" >>"$TEST_DIR/.submitted"
  wait_for 90 "$name (job $id) to end" job_ended "$id"
  out=$(cat "$home"/proj/cron/logs/cron-"$name"-"$id".out 2>/dev/null || true)
  [ "$(job_state "$id")" = COMPLETED ] || fail "$name ended $(job_state "$id") (not OK) beside the training: $out"
  log "$name: $(head -n 1 <<<"$out")"
done

log "look: README's ${#look[@]} trainctl lines, with this job's ids"
running=$(squeue -h -j "$job" -t RUNNING -o %A | head -n 1)  # task 3, or 4 after its deadline
[ -n "$running" ] || fail "no task of array $job runs"
type_line "${look[0]}"
grep -qE "^($running|${job}_[0-9]+) +train +n" <<<"$(output_of "$typed")" ||
  fail "trainctl status does not list the running task (job $running): $(output_of "$typed")"
type_line "${look[1]//1371/$running}"
grep -qE "^job ($running|${job}_[0-9]+) \(train\) RUNNING on n.*: 4 ranks on 2 nodes$" <<<"$(output_of "$typed")" ||
  fail "trainctl status $running: $(output_of "$typed")"
type_line "${look[2]//5175/$job}"
report=$(output_of "$typed")
grep -qE "^${job}_1 +COMPLETED +2 .* deadline at step $TASK1_STEP$" <<<"$report" || fail "trainctl report $job: no task 1: $report"
grep -qE "^${job}_2 +COMPLETED +2 .* kill-switch at step $task2_saved$" <<<"$report" || fail "trainctl report $job: no task 2: $report"
grep -qE "^interruptions 2 \(kill switch 1, time limit 1\)" <<<"$report" || fail "trainctl report $job: not its 2 interruptions: $report"
grep -qE "^${job}_1 +time limit +[0-9.]+s .* 0 steps \([0-9.]+s\)$" <<<"$report" ||
  fail "trainctl report $job: task 1's time limit is not an interruption resumed at its save: $report"
grep -qE "^goodput +[0-9.]+%" <<<"$report" || fail "trainctl report $job: no goodput: $report"
log "faq: docs/faq.md's command lines, as written but for the example ids (array 4242)"
mapfile -t faq < <(sed -n 's/^    \$ //p' "$SRC/docs/faq.md")
[ "${#faq[@]}" -ge 10 ] || fail "docs/faq.md has ${#faq[@]} command lines ('    \$ ...'), not 10 or more"
for l in "${faq[@]}"; do type_line "${l//4242/$job}"; done
grep -q "^SLURM [0-9.]* on this node" "$shell_log" || fail "docs/faq.md's trainctl version said: $(grep -A3 '^\$ trainctl version' "$shell_log")"
grep -q "^JOB-RUNNING OK - 'train' is running" "$shell_log" || fail "docs/faq.md's trainwatch line did not find the job running"
log "faq: ${#faq[@]} lines ran"
log "torchrun: docs/torchrun.md's job script and its command lines, in the same shell"
scancel "$job"  # the array is done with; the page's job trains beside nothing of the user's
mapfile -t steps < <(sed -n 's/^    \$ //p' "$SRC/docs/torchrun.md")
[ "${#steps[@]}" -eq 5 ] || fail "docs/torchrun.md has ${#steps[@]} command lines, not 5"
expect steps 0 '^sbatch job\.sh$'
expect steps 1 '^trainctl status$'
expect steps 2 '^touch save-switch-llm$'
expect steps 3 '^touch kill-switch-llm$'
expect steps 4 '^rm kill-switch-llm && sbatch job\.sh$'
# The page's batch script, as the user saves it, and torchrun where `pip install torch`
# puts it: here torchrun's process model without torch (the venv has none).
script_block "$SRC/docs/torchrun.md" >"$home/proj/job.sh"
grep -q '^srun trainctl-run ' "$home/proj/job.sh" || fail "docs/torchrun.md has no job script: $(cat "$home/proj/job.sh")"
# docs/users.md shows the same script (its trainctl-run section): the one run here.
users_script=$(script_block "$SRC/docs/users.md")
[ "$users_script" = "$(cat "$home/proj/job.sh")" ] ||
  fail "docs/users.md's batch script is not docs/torchrun.md's (the one this test runs): $users_script"
printf '#!/bin/sh\nexec python3 %s "$@"\n' "$SRC/tests/e2e/light_launcher.py" >"$home/trainctl-env/bin/torchrun"
chmod 755 "$home/trainctl-env/bin/torchrun" && chown tcreadme "$home/proj/job.sh" "$home/trainctl-env/bin/torchrun"
type_line "unset SBATCH_TIMELIMIT"  # the test's 2-minute limit was the array's; this job keeps the page's 4 hours
type_line "${steps[0]}"
llm=$(submitted)
echo "$llm" >>"$TEST_DIR/.submitted"
llm_out() { cat "$home/proj/llm-$1.out" 2>/dev/null || true; }
llm_said() { grep -qE "$2" <<<"$(llm_out "$1")"; }
wait_for 120 "job $llm's rank 0 to start" llm_said "$llm" '^train: event=start rank=0 '
type_line "${steps[1]}"
grep -qE "^$llm +llm +n" <<<"$(output_of "$typed")" || fail "trainctl status does not list job $llm: $(output_of "$typed")"
type_line "${steps[2]}"
wait_for 60 "job $llm's save-switch save" llm_said "$llm" '^train: event=save rank=0 .* why=save-switch'
type_line "${steps[3]}"
wait_for 60 "job $llm to end on the kill switch" job_ended "$llm"
[ "$(job_state "$llm")" = COMPLETED ] || fail "job $llm ended $(job_state "$llm"): $(llm_out "$llm" | tail -n 5)"
stopped=$(llm_out "$llm" | sed -n 's/^train: event=exit rank=0 .* step=\([0-9]*\) reason=kill-switch.*/\1/p')
[ -n "$stopped" ] || fail "job $llm's rank 0 did not exit on the kill switch: $(llm_out "$llm" | tail -n 5)"
type_line "${steps[4]}"
again=$(submitted)
[ "$again" != "$llm" ] || fail "the page's resubmission printed no job id"
echo "$again" >>"$TEST_DIR/.submitted"
wait_for 120 "job $again to resume from step $stopped" llm_said "$again" "^train: event=start rank=0 .* resumed_from=$stopped "
log "torchrun: job $llm saved on the save switch, stopped at step $stopped on the kill switch (COMPLETED); job $again resumed from it"
log "PASS: README's quick start as written, as $TEST_USER with the wheel: installed, trained, saved, deadline and resume, kill switch held the array, released, watched, looked at"
