#!/usr/bin/env bash
# The project's scripts fail when what they run fails: a crashing fuzzer fails
# scripts/fuzz, and run_filtered (which scripts/build and scripts/testbed use to
# filter cmake's output) passes on the command's status, not grep's.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# shellcheck source=scripts/lib.sh
. "$src/scripts/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# run_filtered: the command's status, whatever grep matched.
rc=0; run_filtered '^never matches' false >/dev/null || rc=$?
[ "$rc" -eq 1 ] || fail "run_filtered lost a failure with no matching line (status $rc)"
rc=0; out=$(run_filtered '^keep' sh -c 'echo keep; echo drop; exit 3') || rc=$?
[ "$rc" -eq 3 ] || fail "run_filtered returned $rc for a command that exited 3"
[ "$out" = keep ] || fail "run_filtered printed '$out', expected only 'keep'"
rc=0; out=$(run_filtered '!^drop' sh -c 'echo keep; echo drop') || rc=$?
if [ "$rc" -ne 0 ] || [ "$out" != keep ]; then fail "inverted filter: status $rc, output '$out'"; fi

# A fuzz target that crashes the way libFuzzer reports it: scripts/fuzz exits 1.
mkdir -p "$work/fuzz"
cat >"$work/fuzz/fuzz_crash" <<'SH'
#!/bin/sh
echo "==4242==ERROR: AddressSanitizer: heap-buffer-overflow (a deliberate crash)"
echo "SUMMARY: AddressSanitizer: heap-buffer-overflow"
exit 1
SH
chmod +x "$work/fuzz/fuzz_crash"
rc=0; out=$(TRAINCTL_FUZZ_DIR="$work/fuzz" bash "$src/scripts/fuzz" 1 2>&1) || rc=$?
[ "$rc" -eq 1 ] || fail "scripts/fuzz exited $rc for a crashing target; output: $out"
grep -q 'fuzz_crash failed' <<<"$out" || fail "scripts/fuzz did not name the crashing target: $out"
grep -q 'no crash' <<<"$out" && fail "scripts/fuzz reported 'no crash' for a crash: $out"

# And a target that runs clean passes.
printf '#!/bin/sh\necho "Done 10 runs in 1 second(s)"\n' >"$work/fuzz/fuzz_crash"
rc=0; out=$(TRAINCTL_FUZZ_DIR="$work/fuzz" bash "$src/scripts/fuzz" 1 2>&1) || rc=$?
[ "$rc" -eq 0 ] || fail "scripts/fuzz exited $rc for a clean target: $out"
echo "scripts fail when they should: ok"
