#!/usr/bin/env bash
# The .deb from scripts/package on this Debian 12 machine: it installs cleanly, the
# tools, library, Python package, pkg-config file and man pages work from /usr, the
# installed plugin (enabled by one plugstack.conf line, as an admin would) adds its
# options to srun and runs tasks under the installed /usr/bin/trainctl-run; removal
# leaves no file behind.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
package_installed() { dpkg-query -W -f='${Status}' trainctl 2>/dev/null | grep -q "install ok installed"; }
package_installed && fail "trainctl is already installed as a package; remove it first (dpkg -r trainctl)"
installed=""
on_exit() {
  local rc=$?
  [ -z "$installed" ] || dpkg --purge trainctl >/dev/null 2>&1 || true
  set +e  # errexit would end this handler at the next line, before cleanup
  (exit "$rc")
  cleanup
}
trap on_exit EXIT

deb=$(bash "$SRC/scripts/package" | tail -n 1 | sed 's/^package: //')
log "built $deb"
dpkg -i "$deb" >"$TEST_DIR/dpkg-install.log" 2>&1 || { cat "$TEST_DIR/dpkg-install.log"; fail "dpkg -i failed"; }
installed=1
grep -qi "warning\|error" "$TEST_DIR/dpkg-install.log" && { cat "$TEST_DIR/dpkg-install.log"; fail "dpkg -i warned"; }
mapfile -t files < <(dpkg -L trainctl | while read -r f; do [ -f "$f" ] && echo "$f"; done)
log "installed ${#files[@]} files"

[ "$(/usr/bin/trainwatch --version)" = "trainwatch 0.1.0" ] || fail "trainwatch --version: $(/usr/bin/trainwatch --version)"
[ "$(/usr/bin/trainctl-run --version)" = "trainctl-run 0.1.0" ] || fail "trainctl-run --version"
env -u PYTHONPATH /usr/bin/python3 -c 'import trainctl; c = trainctl.Controller(signals="none"); assert not c.check(0).exit; print("python3: trainctl", trainctl.version())' ||
  fail "Debian's python3 cannot use the installed package"
[ "$(pkg-config --modversion trainctl)" = 0.1.0 ] || fail "pkg-config does not find trainctl"
for page in trainwatch trainctl-run trainctl_spank; do man -w "$page" >/dev/null || fail "man $page: no page"; done
log "trainwatch, trainctl-run, import trainctl, pkg-config and man pages work from /usr"

plugstack=$(dirname "$SLURM_CONF")/plugstack.conf
PLUGSTACK_SAVED=$TEST_DIR/plugstack.conf.saved  # restored by cleanup
cp "$plugstack" "$PLUGSTACK_SAVED"
grep -h '^optional' /usr/share/trainctl/plugstack.conf.example >"$plugstack"  # the admin's one line
srun --help 2>&1 | grep -q -- '--graceful-exit' || fail "srun --help does not list --graceful-exit with the installed plugin"
# shellcheck disable=SC2016  # expanded by the task's shell
parent=$(srun -N1 -t1 --kill-switch="$TEST_DIR/KILL" bash -c 'echo "$KILL_SWITCH $(readlink /proc/$PPID/exe)"')
[ "$parent" = "$TEST_DIR/KILL /usr/bin/trainctl-run" ] || fail "the task's KILL_SWITCH and parent: '$parent'"
log "the installed plugin: srun --help lists --graceful-exit; a task runs under /usr/bin/trainctl-run"
cp "$PLUGSTACK_SAVED" "$plugstack"

/usr/bin/python3 -c 'import trainctl' 2>/dev/null || true  # leaves byte-code, which removal must take too
dpkg -r trainctl >"$TEST_DIR/dpkg-remove.log" 2>&1 || { cat "$TEST_DIR/dpkg-remove.log"; fail "dpkg -r failed"; }
installed=""
grep -qi "warning" "$TEST_DIR/dpkg-remove.log" && { cat "$TEST_DIR/dpkg-remove.log"; fail "dpkg -r warned"; }
for f in "${files[@]}"; do [ ! -e "$f" ] || fail "$f is still there after dpkg -r"; done
[ ! -e /usr/lib/python3/dist-packages/trainctl ] || fail "the Python package directory is still there"
dpkg --purge trainctl >/dev/null 2>&1 || fail "dpkg --purge failed"
package_installed && fail "dpkg still lists trainctl"
log "PASS: the .deb installs, works from /usr with the local cluster, and is removed without a trace"
