#!/usr/bin/env bash
# The one command: `trainctl --help` lists the verbs and each verb tells its own (help
# VERB, VERB --help, and the man page has them all); bad input is one line and exit 2;
# `trainctl run` supervises a task as trainctl-run does; bash completes verbs,
# subcommands and options.
# e2e-core: all
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
trap cleanup EXIT
tc=$BUILD/bin/trainctl

help=$("$tc" --help) || fail "trainctl --help exited non-zero"
for verb in run stacks bad-nodes version; do
  grep -qE "^  $verb +[a-z]" <<<"$help" || fail "trainctl --help does not list $verb: $help"
  "$tc" help "$verb" >"$TEST_DIR/help-$verb" || fail "trainctl help $verb exited non-zero"
  "$tc" "$verb" --help | cmp -s - "$TEST_DIR/help-$verb" || fail "trainctl $verb --help differs from trainctl help $verb"
done
grep -qx "trainctl [0-9]*\.[0-9]*\.[0-9]*" <<<"$("$tc" --version)" || fail "trainctl --version: $("$tc" --version)"
version=$("$tc" version) || fail "trainctl version exited non-zero"
[ "$(head -n 1 <<<"$version")" = "$("$tc" --version)" ] || fail "trainctl version's first line is not --version's: $version"
slurm=$(sinfo -V | grep -o '[0-9][0-9]*\.[0-9][0-9]\.[0-9][0-9]*' | head -n 1)
grep -q "^SLURM $slurm on this node (scontrol --version): " <<<"$version" ||
  fail "trainctl version does not name this node's SLURM $slurm: $version"
# The plugin the cluster's plugstack.conf loads (this build's), read from its file.
grep -qxF "plugin: trainctl $("$tc" --version | cut -d' ' -f2) (node-state layout $(sed -n 's/^node-state layout \([0-9]*\),.*/\1/p' <<<"$version")), $BUILD/spank_plugin/trainctl_spank.so (from $TRAINCTL_CLUSTER_PLUGSTACK)" <<<"$version" ||
  fail "trainctl version does not name the cluster's plugin: $version"
! grep -q '^mismatch:' <<<"$version" || fail "trainctl version finds a mismatch in one build: $version"
for bad in "" "frobnicate" "help frobnicate" "stacks" "bad-nodes mark n1" "bad-nodes forget" "version extra" \
  "status abc" "stacks 12x" "report 1_2_3"; do
  set +e
  # shellcheck disable=SC2086  # the words of each case
  "$tc" $bad >"$TEST_DIR/out" 2>"$TEST_DIR/err"
  rc=$?
  set -e
  [ "$rc" -eq 2 ] || fail "trainctl $bad exited $rc, not 2"
  [ -n "$bad" ] || continue  # bare: the usage, as git does
  [ "$(wc -l <"$TEST_DIR/err")" -eq 1 ] || fail "trainctl $bad: not one line: $(cat "$TEST_DIR/err")"
  [ ! -s "$TEST_DIR/out" ] || fail "trainctl $bad wrote to stdout"
done
log "help, version and 10 kinds of bad input (a job id among them, before any controller is asked): one line each, exit 2"

# A mistyped verb, flag or check names the closest accepted one (git's and kubectl's
# habit), in the same one line; a word close to nothing gets no guess.
# suggests TOOL_AND_ARGS EXIT LINE: the tool exits EXIT with exactly LINE on stderr;
# "*" in LINE stands for CLI11's own words, which differ between its releases (sid's
# lists the unexpected arguments in another order).
suggests() {
  local rc=0
  # shellcheck disable=SC2086  # the words of each case
  $1 >"$TEST_DIR/out" 2>"$TEST_DIR/err" || rc=$?
  [ "$rc" -eq "$2" ] || fail "$1 exited $rc, not $2"
  [ "$(wc -l <"$TEST_DIR/err")" -eq 1 ] || fail "$1: not one line: $(cat "$TEST_DIR/err")"
  # shellcheck disable=SC2053  # LINE is a pattern on purpose
  [[ "$(cat "$TEST_DIR/err")" == $3 ]] || fail "$1 said: $(cat "$TEST_DIR/err"); expected: $3"
}
verbs="accepted: run, status, stacks, report, bad-nodes, lint, drill, version, completion, help (trainctl --help)"
suggests "$tc stauts" 2 "trainctl: 'stauts' is not a verb (did you mean 'status'?); $verbs"
suggests "$tc frobnicate" 2 "trainctl: 'frobnicate' is not a verb; $verbs"
suggests "$tc status --jsno 1" 2 "trainctl status: unknown option --jsno (did you mean --json?) (see trainctl help status)"
suggests "$BUILD/bin/trainctl-run --graceful-exti=5 -- true" 125 \
  "trainctl-run: unknown option --graceful-exti (did you mean --graceful-exit?) (see trainctl-run --help)"
suggests "$BUILD/bin/trainwatch job-running --job-nam x" 3 \
  "trainwatch: unknown option --job-nam (did you mean --job-name?) (see trainwatch --help)"
checks="accepted: job-running, log-stall, slow-nodes, job-on-bad-node, fs, memory, flush, notify (see trainwatch --help)"
suggests "$BUILD/bin/trainwatch job-runing --job-name x" 3 \
  "trainwatch: 'job-runing' is not a trainwatch command (did you mean 'job-running'?); $checks"
suggests "$BUILD/bin/trainwatch memroy" 3 "trainwatch: 'memroy' is not a trainwatch command (did you mean 'memory'?); $checks"
log "a mistyped verb, flag or check names the closest one: trainctl, trainctl-run, trainwatch"

# The wrapper's own codes are timeout's and env's (125 usage, 126 not runnable, 127 not
# found), so a training script's own exit 2 (argparse) passes through as the command's.
for run in "$BUILD/bin/trainctl-run" "$tc run"; do
  suggests "$run --graceful-exit=abc -- true" 125 "${run##*/}: --graceful-exit: 'abc' is not a duration; accepted: *"
  suggests "$run --kill-switch=$TEST_DIR/K" 125 "${run##*/}: no command given; usage: *"
  rc=0
  $run -- "$TEST_DIR/no-such-program" 2>"$TEST_DIR/err" || rc=$?
  [ "$rc" -eq 127 ] || fail "$run: a missing command exited $rc, not 127"
  grep -q "cannot run $TEST_DIR/no-such-program: No such file or directory" "$TEST_DIR/err" ||
    fail "$run: a missing command said: $(cat "$TEST_DIR/err")"
  rc=0
  $run -- python3 -c 'import argparse; argparse.ArgumentParser().parse_args(["--bad"])' 2>/dev/null || rc=$?
  [ "$rc" -eq 2 ] || fail "$run: a command's own exit 2 came out as $rc"
done
log "trainctl-run and trainctl run: 125 for their own bad input, 127 for a missing command, the command's own 2 passed on"

# --help names the kind of each value (DURATION, PATH, JOB, ...): TEXT only where the
# value is free text (trainwatch notify --text).
helps=("$BUILD/bin/trainctl-run --help")
for verb in run status stacks report bad-nodes "bad-nodes mark"; do helps+=("$tc $verb --help"); done
for check in "" job-running log-stall slow-nodes job-on-bad-node fs memory flush notify; do helps+=("$BUILD/bin/trainwatch $check --help"); done
for h in "${helps[@]}"; do
  # shellcheck disable=SC2086  # the words of each case
  text=$($h | grep -E '^ +-?-?[A-Za-z-]+ TEXT' | grep -v -- '--text TEXT' || true)  # judged by its output
  [ -z "$text" ] || fail "$h names a value TEXT: $text"
done
log "--help names the kind of every value (${#helps[@]} help texts)"

# shellcheck disable=SC2016  # expanded by the task's shell
parent=$(srun -N1 -t1 "$tc" run --kill-switch="$TEST_DIR/KILL" -- bash -c 'echo "$KILL_SWITCH $(readlink /proc/$PPID/exe)"')
[ "$parent" = "$TEST_DIR/KILL $BUILD/bin/trainctl" ] || fail "the task's KILL_SWITCH and parent under trainctl run: '$parent'"
touch "$TEST_DIR/KILL"
srun -N1 -t1 "$tc" run --kill-switch="$TEST_DIR/KILL" -- bash -c 'echo started' >"$TEST_DIR/killed.out" 2>&1 ||
  fail "a task started with the kill switch present did not end with status 0"
if grep -q started "$TEST_DIR/killed.out"; then fail "a task started with the kill switch present ran"; fi
log "trainctl run supervises the task (its parent) and a task that starts under the kill switch ends at once"

# Completion, as bash calls it (made from the parsers at build time; the shells' own
# tests are tests/unit/cli/completion_test.sh).
# shellcheck source=/dev/null
source "$BUILD/cli/completion.bash"
complete_words() {
  COMP_WORDS=("$@")
  COMP_CWORD=$(($# - 1))
  _trainctl
  echo "${COMPREPLY[*]}"
}
[ "$(complete_words trainctl ba)" = bad-nodes ] || fail "completion of 'trainctl ba': $(complete_words trainctl ba)"
[ "$(complete_words trainctl bad-nodes "")" = "list mark forget" ] ||
  fail "completion after bad-nodes: $(complete_words trainctl bad-nodes "")"
[ "$(complete_words trainctl stacks --l)" = --log-dir ] || fail "completion of 'stacks --l'"
[ "$(complete_words trainctl run --kill)" = --kill-switch ] || fail "completion of 'run --kill'"
if command -v man >/dev/null; then
  page=$(MANWIDTH=200 man -l "$BUILD/man/trainctl.1" 2>/dev/null)
  for verb in run stacks bad-nodes; do grep -q "trainctl $verb:" <<<"$page" || fail "man trainctl has no section for $verb"; done
fi
log "PASS: trainctl lists and explains its verbs, refuses bad input in one line, runs a task supervised; bash completes it"
