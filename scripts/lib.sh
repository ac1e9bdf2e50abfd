# shellcheck shell=bash
# Helpers shared by the scripts in scripts/ (sourced, not run).

# run_filtered PATTERN CMD...: runs CMD with its output in a temporary file, prints
# the lines that match the extended regex PATTERN (or, with PATTERN starting "!", the
# lines that do not), and returns CMD's own exit status. A pipe into grep would lose
# that status: `cmd | grep ... || true` leaves PIPESTATUS as (0) whenever `true` runs.
run_filtered() {
  local pattern=$1 log rc=0 grep_rc=0 invert=()
  shift
  if [ "${pattern:0:1}" = "!" ]; then
    invert=(-v)
    pattern=${pattern:1}
  fi
  log=$(mktemp) || return 1
  "$@" >"$log" 2>&1 || rc=$?
  grep "${invert[@]}" -E -- "$pattern" "$log" || grep_rc=$?
  # grep's 1 only means "no line matched"; more is a failure of grep itself.
  if [ "$rc" -eq 0 ] && [ "$grep_rc" -gt 1 ]; then rc=$grep_rc; fi
  rm -f "$log"
  return "$rc"
}
