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

# scripts/sizes.py: a class over 20 data members and a file over 600 lines each fail lint
# with a line naming them; at the limits they pass.
{
  echo 'struct wide {'
  for i in $(seq 1 21); do echo "  int f$i;"; done
  echo '  int method(int a, int b) const { return a + b; }'
  echo '};'
} >"$work/wide.hpp"
{
  echo 'struct fits {'
  for i in $(seq 1 19); do echo "  int f$i;"; done
  echo '  std::map<int, int> pairs;  // one member, whatever its commas'
  echo '};'
} >"$work/fits.hpp"
seq 1 601 | sed 's/^/# /' >"$work/long.py"
rc=0; out=$(python3 "$src/scripts/sizes.py" "$work/wide.hpp" "$work/fits.hpp" "$work/long.py") || rc=$?
[ "$rc" -eq 1 ] || fail "sizes.py passed a 21-member struct and a 601-line file (status $rc): $out"
grep -q "wide has 21 data members" <<<"$out" || fail "sizes.py did not name the wide struct: $out"
grep -q "long.py has 601 lines" <<<"$out" || fail "sizes.py did not name the long file: $out"
! grep -q "fits" <<<"$out" || fail "sizes.py refused a 20-member struct: $out"

# A function over 80 lines (signature to closing brace), C++ or Python, fails the same way,
# one of 80 passes; braces in a comment or a string are not the function's end.
fn() {  # NAME LINES: a C++ function of that many lines
  echo "int $1(int a) {"
  echo '  // a } in a comment'
  echo '  const char* s = "}";'
  for i in $(seq 4 $(($2 - 1))); do echo "  a += $i;"; done
  echo '}'
}
{ echo 'namespace x {'; fn long_one 81; fn short_one 80; echo '}  // namespace x'; } >"$work/fns.cpp"
{ echo 'def long_def():'; for i in $(seq 2 81); do echo "    a = $i"; done; } >"$work/fns.py"
rc=0; out=$(python3 "$src/scripts/sizes.py" "$work/fns.cpp" "$work/fns.py") || rc=$?
[ "$rc" -eq 1 ] || fail "sizes.py passed an 81-line function (status $rc): $out"
grep -q "fns.cpp:2: long_one is 81 lines" <<<"$out" || fail "sizes.py did not name the long C++ function: $out"
grep -q "fns.py:1: long_def is 81 lines" <<<"$out" || fail "sizes.py did not name the long Python def: $out"
! grep -q "short_one" <<<"$out" || fail "sizes.py refused an 80-line function: $out"

# scripts/event_kinds.py: a run-event kind compared or set as a literal fails with its
# line; the kind through run_event_kind:: and a literal in a comment do not.
printf '%s\n' 'bool a(const run_event& e) { return e.what == "first_step"; }' \
  'run_event b() { return make_run_event("save", "1", 0); }' \
  'bool c(const run_event& e) { return e.what == run_event_kind::kSave; }  // not e.what == "save"' >"$work/kinds.cpp"
rc=0; out=$(python3 "$src/scripts/event_kinds.py" "$work/kinds.cpp") || rc=$?
[ "$rc" -eq 1 ] || fail "event_kinds.py passed run-event kinds written as literals (status $rc): $out"
grep -q 'kinds.cpp:1: the run-event kind "first_step" written as a literal' <<<"$out" ||
  fail "event_kinds.py did not name the compared literal: $out"
grep -q 'kinds.cpp:2: the run-event kind "save" written as a literal' <<<"$out" ||
  fail "event_kinds.py did not name the made literal: $out"
! grep -q "kinds.cpp:3" <<<"$out" || fail "event_kinds.py refused a kind through run_event_kind:: or a comment: $out"

# scripts/env_home.py: a getenv outside common/env.hpp fails lint with its line; the
# plugin's spank_getenv and a getenv in a comment do not.
printf '%s\n' '#include <cstdlib>' 'const char* f() { return std::getenv("HOME"); }' >"$work/reads.cpp"
printf '%s\n' 'int g(spank_t sp) { return spank_getenv(sp, "X", b, 1); }  // not getenv("X")' >"$work/spank.cpp"
rc=0; out=$(python3 "$src/scripts/env_home.py" "$work/reads.cpp" "$work/spank.cpp") || rc=$?
[ "$rc" -eq 1 ] || fail "env_home.py passed a getenv outside common/env.hpp (status $rc): $out"
grep -q "reads.cpp:2: getenv outside common/env.hpp" <<<"$out" || fail "env_home.py did not name the line: $out"
! grep -q "spank.cpp" <<<"$out" || fail "env_home.py refused spank_getenv or a comment: $out"
# A variable's name spelled as a literal at a read fails too; its constant does not.
printf '%s\n' 'std::string j() { return env_text("SLURM_JOB_ID"); }' \
  'std::string r(pid_t p) { return proc_environ_value(p, "RANK"); }' \
  'std::string k() { return env_text(env_var::kSlurmJobId); }' >"$work/names.cpp"
rc=0; out=$(python3 "$src/scripts/env_home.py" "$work/names.cpp") || rc=$?
[ "$rc" -eq 1 ] || fail "env_home.py passed variable names written as literals (status $rc): $out"
grep -q "names.cpp:1: SLURM_JOB_ID written as a literal: name it in common/env_names.hpp" <<<"$out" ||
  fail "env_home.py did not name the literal SLURM_JOB_ID: $out"
grep -q "names.cpp:2: RANK written as a literal" <<<"$out" || fail "env_home.py did not name the literal RANK: $out"
! grep -q "names.cpp:3" <<<"$out" || fail "env_home.py refused a read through env_names.hpp: $out"

# scripts/protocol_fields.py: a raw load of the node state's deadline, a raw store to the
# breaker or to a rank's heartbeat, a step read raw (a heartbeat's or a straggler report's)
# outside their homes in protocol/ fail lint with their lines; a controller's own atomic
# named local_deadline_ms and a field in a comment do not.
printf '%s\n' 'std::int64_t d(const node_state& n) {' '  return n.deadline_ms.load(std::memory_order_acquire);' '}' \
  'void a(node_state& n) { n.breaker . runs.store(3); }' 'void r(rank_beat* b) { b->pid.store(0); }' \
  'std::int64_t s(const rank_beat& b) { return b.step.load(); }' >"$work/raw.cpp"
printf '%s\n' 'void b() { local_deadline_ms.store(5); }  // not n.deadline_ms.store(5)' >"$work/own.cpp"
rc=0; out=$(python3 "$src/scripts/protocol_fields.py" "$work/raw.cpp" "$work/own.cpp") || rc=$?
[ "$rc" -eq 1 ] || fail "protocol_fields.py passed raw node-state accesses (status $rc): $out"
grep -q "raw.cpp:2: the node state's deadline_ms read or written raw: use protocol/deadline_fields.hpp (deadline)" <<<"$out" ||
  fail "protocol_fields.py did not name the raw deadline load: $out"
grep -q "raw.cpp:4: the node state's breaker.runs read or written raw: use protocol/breaker_fields.hpp" <<<"$out" ||
  fail "protocol_fields.py did not name the raw breaker store: $out"
grep -q "raw.cpp:5: the node state's pid read or written raw: use protocol/beat_fields.hpp (heartbeats and phases)" <<<"$out" ||
  fail "protocol_fields.py did not name the raw heartbeat store: $out"
grep -q "raw.cpp:6: the node state's step read or written raw: use protocol/beat_fields.hpp (heartbeats and phases) or protocol/straggler_fields.hpp (stragglers)" <<<"$out" ||
  fail "protocol_fields.py did not name both homes of a shared field name: $out"
! grep -q "own.cpp" <<<"$out" || fail "protocol_fields.py refused a process's own atomic or a comment: $out"

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
