#!/usr/bin/env bash
# trainctl completion bash|zsh|fish: each script, made from the parsers, loads in its
# shell and completes verbs, subcommands, options and option values there. A shell
# that is not installed fails the test (scripts/install-deps installs zsh and fish).
set -euo pipefail
tc=$1
dir=$(mktemp -d /tmp/trainctl-completion-XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() { echo "completion: $*" >&2; exit 1; }
for shell in bash zsh fish; do
  "$tc" completion "$shell" >"$dir/c.$shell" || fail "trainctl completion $shell failed"
  command -v "$shell" >/dev/null || fail "$shell is not installed"
done

# Every long option of every verb's --help is in the scripts (they cannot drift).
for verb in run status stacks report bad-nodes lint drill; do
  for option in $("$tc" "$verb" --help | grep -oE -e '^ +(-[a-zA-Z],)?--[a-z][a-z-]*' | grep -oE -e '--[a-z-]+' | sort -u); do
    for shell in bash zsh fish; do
      case $shell in fish) want="-l ${option#--}" ;; *) want="'$option'" ;; esac
      grep -qF -e "$want" "$dir/c.$shell" || fail "the $shell script lacks $verb $option"
    done
  done
done

# bash, as readline calls it.
got=$(bash -c '
  source "$1"
  t() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _trainctl; echo "${COMPREPLY[*]}"; }
  t trainctl st; t trainctl status --; t trainctl run --hang-a; t trainctl bad-nodes f
  t trainctl help rep; t trainctl completion z; t trainctl run --log-dir /tm' _ "$dir/c.bash")
want=$'status stacks\n--help --watch --interval --json\n--hang-action\nforget\nreport\nzsh\n/tmp'
[ "$got" = "$want" ] || fail "bash completed: $(printf '%s' "$got" | tr '\n' '|')"

# zsh: loaded as compinit would, then _trainctl run with the completion system's
# builtins standing in (they need a terminal) to see what it offers.
got=$(zsh -fc '
  autoload -U compinit; compinit -u -D 2>/dev/null
  source "$1"
  compadd() { if [[ $1 == -a ]]; then print -rl -- "${(@P)2}"; else print -rl -- "$@"; fi; }
  _describe() { print -rl -- "${(@P)4}"; }
  _files() { print -r -- "files $*"; }
  t() { words=("$@"); CURRENT=$#; PREFIX=${words[-1]}; _trainctl | tr "\n" " "; print; }
  t trainctl status --; t trainctl bad-nodes ""; t trainctl run --log-dir ""; t trainctl help ""' _ "$dir/c.zsh")
grep -q -- '^--help:Print.* --watch:refresh in place' <<<"$(sed -n 1p <<<"$got")" || fail "zsh: status --: $(sed -n 1p <<<"$got")"
grep -q '^list:.* mark:remember NODE .* forget:forget' <<<"$(sed -n 2p <<<"$got")" || fail "zsh: bad-nodes: $(sed -n 2p <<<"$got")"
[ "$(sed -n 3p <<<"$got")" = "files -/ " ] || fail "zsh: --log-dir: $(sed -n 3p <<<"$got")"
grep -q '^run status stacks report bad-nodes ' <<<"$(sed -n 4p <<<"$got")" || fail "zsh: help: $(sed -n 4p <<<"$got")"

# fish answers completion queries itself (complete -C).
# shellcheck disable=SC2016  # fish expands $argv
got=$(fish -c 'source $argv[1]; complete -C"trainctl st"; complete -C"trainctl status --"; complete -C"trainctl run --hang-ac"' "$dir/c.fish" | cut -f1 | tr '\n' ' ')
[ "$got" = "stacks status --help --interval --json --watch --hang-action " ] || fail "fish completed: $got"
echo "completion: bash, zsh and fish complete trainctl's verbs, subcommands, options and values"
