#!/usr/bin/env bash
# trainctl lint's and trainctl drill's refusals: one line and exit 2, with nothing else
# printed (and no job submitted), for a missing script, a script sbatch would refuse, an
# sbatch option it cannot read, and no cluster to check against; lint --list-rules prints
# every rule its --help lists. The findings themselves are lint_test's (one script per
# rule), test_train_template's (a real run's figures) and the drill's e2e tests.
set -euo pipefail
tc=$1
dir=$(mktemp -d /tmp/trainctl-lint-XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "lint_drill_cli: $*" >&2; exit 1; }
cd "$dir"
# refuses WHAT PATTERN ARGS...: trainctl $VERB ARGS exits 2 with one line on stderr matching
# PATTERN (LINT_ENV: NAME=VALUE for the verb's environment).
VERB=lint
refuses() {
  local what=$1 pattern=$2 rc=0
  shift 2
  env ${LINT_ENV:+"$LINT_ENV"} "$tc" "$VERB" "$@" >out 2>err || rc=$?
  [ "$rc" -eq 2 ] || fail "$what: exit $rc, not 2 ($(cat out err))"
  [ ! -s out ] || fail "$what: printed on stdout: $(cat out)"
  [ "$(wc -l <err)" -eq 1 ] || fail "$what: not one line: $(cat err)"
  grep -qE -e "$pattern" err || fail "$what: '$(cat err)' is not /$pattern/"
  echo "lint_drill_cli: $VERB: $what: $(cat err)"
}
refuses "a missing script" "^trainctl lint: cannot read nope\.slurm: No such file or directory$" nope.slurm
printf 'import torch\n' >train.py
refuses "not a batch script" "train\.py: it is not a batch script: its first line does not start with #!" train.py
mkfifo pipe
refuses "a FIFO, never opened so that it blocks" "pipe is not a regular file" pipe
printf '#!/bin/bash\n#SBATCH --time=1:00:00\nsrun true\n' >job.slurm
refuses "an sbatch option it cannot read" "'-Z' is not an sbatch option" job.slurm -Z
refuses "a bad --collective-timeout" "^trainctl lint: --collective-timeout: 'soon' is not a duration" --collective-timeout=soon job.slurm
refuses "no SCRIPT" "^trainctl lint: no SCRIPT; accepted: trainctl lint SCRIPT" --json
# A login node without SLURM's commands (a cluster that does not answer is the same line,
# after scontrol's own minute of retries).
LINT_ENV=PATH=/nonexistent refuses "no cluster reachable" "job\.slurm: no cluster to check it against \(scontrol show config: .*\); run lint where sbatch works" job.slurm

# Every rule is listed, by --list-rules and in --help (so in trainctl-lint(1)).
rules=$("$tc" lint --list-rules | sed -n 's/^  \([a-z-]*\): .*/\1/p')
[ "$(wc -l <<<"$rules")" -ge 10 ] || fail "--list-rules lists $(wc -l <<<"$rules") rules"
help=$("$tc" lint --help)
for rule in $rules; do grep -qE -e "(^|[[:space:]])$rule: " <<<"$help" || fail "--help lacks the rule $rule"; done
# One line, whatever width the CLI11 at hand wraps the description to (sid's wraps it).
grep -q "Exit status 0: nothing found; 1: problems found; 2: it could not lint" <<<"$(tr -s ' \n' ' ' <<<"$help")" ||
  fail "--help lacks the exit statuses"
echo "lint_drill_cli: --list-rules and --help list the $(wc -l <<<"$rules") rules"

# trainctl drill refuses the same way, before it submits anything (no scontrol, no sbatch
# on PATH for the last: it would say it could not submit, never submit).
VERB=drill
refuses "a missing script" "^trainctl drill: cannot read nope\.slurm: No such file or directory$" nope.slurm
refuses "not a batch script" "train\.py: it is not a batch script: its first line does not start with #!" train.py
refuses "a FIFO" "pipe is not a regular file" pipe
refuses "an sbatch option it cannot read" "'-Z' is not an sbatch option" job.slurm -Z
refuses "no SCRIPT" "^trainctl drill: no SCRIPT; accepted: trainctl drill SCRIPT" --keep
refuses "a bad --start-timeout" "^trainctl drill: --start-timeout: 'soon' is not a duration" --start-timeout=soon job.slurm
printf '#!/bin/bash\n#SBATCH --time=1:00:00\n#SBATCH --graceful-exit=5 --kill-switch --save-switch\nsrun true\n' >ok.slurm
LINT_ENV=PATH=/nonexistent refuses "no cluster reachable" "ok\.slurm: no cluster to drill on \(scontrol show config: .*\); run it where sbatch works" ok.slurm
[ -z "$(find . -name 'trainctl-drill-*')" ] || fail "drill: a refusal left a directory behind"
rc=0
"$tc" drill job.slurm >out 2>err || rc=$?
if [ "$rc" -ne 1 ] || ! grep -q "it runs without trainctl, so there is nothing to rehearse; trainctl lint job.slurm says what to add" err; then
  fail "drill of a script without trainctl: exit $rc, $(cat err)"
fi
