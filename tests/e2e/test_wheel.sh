#!/usr/bin/env bash
# The wheel from scripts/package in fresh venvs, as an ML user would use it: every Python
# 3.8+ on this machine (pyenv's, Debian's) makes a venv, `pip install --no-index` takes
# the wheel, and from outside the checkout, with nothing pointing at the build tree, a
# Controller sees a kill switch through the libtrainctl.so.0 inside the wheel (not an
# installed one, not the build tree's).
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
trap cleanup EXIT

TRAINCTL_PACKAGE_DIR=$TEST_DIR/pkg bash "$SRC/scripts/package" --wheel >"$TEST_DIR/package.log" 2>&1 ||
  { cat "$TEST_DIR/package.log"; fail "scripts/package --wheel failed"; }
wheel=$(sed -n 's/^wheel: //p' "$TEST_DIR/package.log")
[ -f "$wheel" ] || fail "scripts/package printed no wheel: $(cat "$TEST_DIR/package.log")"
case $(basename "$wheel") in
  trainctl-*-py3-none-linux_"$(uname -m)".whl) ;;
  *) fail "the wheel's name says the wrong platform or Python: $(basename "$wheel")" ;;
esac
python3 -c 'import sys, zipfile; names = zipfile.ZipFile(sys.argv[1]).namelist(); sys.exit("trainctl/libtrainctl.so.0" not in names)' "$wheel" ||
  fail "the wheel does not carry trainctl/libtrainctl.so.0"
log "built $(basename "$wheel") ($(stat -c %s "$wheel") bytes)"

# Every CPython 3.8+ here: pyenv's versions and Debian's.
# Each by the interpreter it really is (pyenv's python3 on PATH is a shim script).
mapfile -t pythons < <(for p in /usr/bin/python3 /root/.pyenv/versions/3.*/bin/python3 "$(command -v python3)"; do
  [ -x "$p" ] && "$p" -c 'import os, sys; sys.version_info >= (3, 8) and print(os.path.realpath(sys.executable))' 2>/dev/null
done | sort -u)
# Here: pyenv's 3.8 to 3.13 (python3 on PATH is its 3.11) and Debian's 3.11; a fresh Debian
# machine has only its own.
[ "${#pythons[@]}" -ge 1 ] || fail "no Python 3.8+ found"

# The check each venv runs: a kill switch seen, from the library inside the wheel.
cat >"$TEST_DIR/check.py" <<'PY'
import os, sys, time, trainctl, trainctl._native as n
kill = os.path.join(sys.argv[1], "KILL")
ctl = trainctl.Controller(kill_switch=kill, signals="none", poll_interval="100ms", state_path=sys.argv[1] + "/state")
assert not ctl.check(0).exit, "exit before the kill switch"
open(kill, "w").close()
step, end = 1, time.time() + 60  # the switch is seen at the watcher's next poll
while not ctl.check(step).exit and time.time() < end:
    step += 1
    time.sleep(0.01)
d = ctl.last
assert d.exit, "the kill switch was not seen in 60 s"
lib = os.path.realpath(n.lib()._name)
pkg = os.path.realpath(os.path.dirname(trainctl.__file__))
assert lib == os.path.join(pkg, "libtrainctl.so.0"), "loaded %s, not the wheel's copy in %s" % (lib, pkg)
print("%d.%d: trainctl %s, exit: %s, library %s" % (sys.version_info[:2] + (trainctl.version(), d.reason, lib)))
PY
n=0
for py in "${pythons[@]}"; do
  n=$((n + 1))
  venv=$TEST_DIR/venv$n
  "$py" -m venv "$venv" >"$TEST_DIR/venv$n.log" 2>&1 || { cat "$TEST_DIR/venv$n.log"; fail "$py -m venv failed"; }
  "$venv/bin/python" -m pip install --no-index --disable-pip-version-check -q "$wheel" >>"$TEST_DIR/venv$n.log" 2>&1 ||
    { cat "$TEST_DIR/venv$n.log"; fail "pip install of the wheel into a venv of $py failed"; }
  mkdir -p "$TEST_DIR/run$n"
  # Nothing points at the build tree or a system copy; run from / so the checkout is not
  # on sys.path either.
  out=$(cd / && env -u PYTHONPATH -u TRAINCTL_LIBRARY -u LD_LIBRARY_PATH "$venv/bin/python" "$TEST_DIR/check.py" "$TEST_DIR/run$n" 2>&1) ||
    fail "in a venv of $py: $out"
  log "$py: $out"
  "$venv/bin/python" -m pip uninstall -y -q trainctl >>"$TEST_DIR/venv$n.log" 2>&1 || fail "pip uninstall failed in a venv of $py"
  left=$(find "$venv"/lib/python3*/site-packages -maxdepth 1 -name 'trainctl*')
  [ -z "$left" ] || fail "pip uninstall left $left"
done
log "PASS: the wheel installs and works in venvs of ${#pythons[@]} Pythons and uninstalls cleanly"
