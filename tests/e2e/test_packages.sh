#!/usr/bin/env bash
# e2e-alone: it replaces the cluster's plugstack.conf with the packaged one
# The Debian packages and the RPMs from scripts/package, as an admin meets them:
#   - lintian (pedantic and informational tags) and rpmlint (packaging/rpm/rpmlint.toml)
#     find nothing: each accepted finding is an override or filter that says why;
#   - the plugin packages depend on the SLURM release of the headers (22.05: >= 22.05,
#     < 22.06), so a mismatched install is refused;
#   - the RPMs carry the same files as the .debs, package by package (paths mapped from
#     Debian's layout to EL's);
#   - the .debs install with apt-get; the tools, the library (a C program built with
#     pkg-config), the Python package, the man pages work from /usr; the installed plugin,
#     enabled by one plugstack.conf line, runs a task under /usr/bin/trainctl-run in the
#     local cluster; apt-get remove --purge leaves nothing behind.
# The newer releases' roots (scripts/testbed) run the Debian half: TRAINCTL_PACKAGE_KINDS=deb
# (default "deb rpm"); the host's run builds and checks the RPMs.
# e2e-core: all
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
debs=(libtrainctl0 libtrainctl-dev python3-trainctl trainctl slurm-wlm-trainctl-plugin)
any_installed() {
  local p
  for p in "${debs[@]}"; do dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "ok installed" && return 0; done
  return 1
}
# This test installs and removes the packages; an admin's installation is not its to
# replace or remove (the rest of the test command runs beside one).
if any_installed; then
  log "SKIP: trainctl packages are installed on this machine; this test installs and removes them, so it leaves an admin's installation alone (apt-get remove ${debs[*]} to run it)"
  rm -rf "$TEST_DIR"
  exit 77
fi
installed=""
on_exit() {
  local rc=$?
  [ -z "$installed" ] || apt-get remove --purge -y -q "${debs[@]}" >/dev/null 2>&1 || true
  set +e  # errexit would end this handler at the next line, before cleanup
  (exit "$rc")
  cleanup
}
trap on_exit EXIT

pkg=$TEST_DIR/pkg
kinds=${TRAINCTL_PACKAGE_KINDS:-deb rpm}
case $kinds in "deb rpm" | deb) ;; *) fail "TRAINCTL_PACKAGE_KINDS='$kinds'; accepted: 'deb rpm', 'deb'" ;; esac
with_rpm() { [ "$kinds" = "deb rpm" ]; }
read -r -a kind_args <<<"$kinds"
# scripts/test builds the host's packages beside the other end-to-end tests (two compiles,
# 6 minutes of CPU, off the tests' critical path) and names the directory in
# TRAINCTL_PACKAGES_PREBUILT: scripts/package's output goes to package.log there, its exit
# status to package.status once it is done. Run alone, the test builds its own.
prebuilt=${TRAINCTL_PACKAGES_PREBUILT:-}
if [ -n "$prebuilt" ]; then
  log "waiting for the packages built in the background in $prebuilt"
  wait_for 1800 "scripts/package in $prebuilt to finish" test -s "$prebuilt/package.status"
  cp "$prebuilt/package.log" "$TEST_DIR/package.log"
  status=$(cat "$prebuilt/package.status")
  [ "$status" = 0 ] || { cat "$TEST_DIR/package.log"; fail "scripts/package failed in the background (exit $status)"; }
  pkg=$prebuilt
  [ -d "$pkg/deb" ] || fail "no .debs in $pkg"
  if with_rpm && [ ! -d "$pkg/rpm/RPMS" ]; then fail "no RPMs in $pkg (TRAINCTL_PACKAGE_KINDS='$kinds')"; fi
else
  TRAINCTL_PACKAGE_DIR=$pkg bash "$SRC/scripts/package" "${kind_args[@]/#/--}" >"$TEST_DIR/package.log" 2>&1 ||
    { cat "$TEST_DIR/package.log"; fail "scripts/package ($kinds) failed"; }
fi
log "$(grep -c '^deb: ' "$TEST_DIR/package.log") .debs and $(grep -c '^rpm: ' "$TEST_DIR/package.log") RPMs built"
deb_of() {
  local arch
  arch=$(dpkg --print-architecture)
  [ "$1" != python3-trainctl ] || arch=all
  echo "$pkg/deb/$1_"*"_$arch.deb"
}
rpm_of() { find "$pkg/rpm/RPMS" -name "$1-[0-9]*.rpm" | head -n 1; }

# --- the linters ---------------------------------------------------------------------
# Every tag down to pedantic and informational ones; not the experimental ones (X:), which
# lintian itself is unsure of: sid's finds a misspelt "InvalidE" in CLI11's mangled names.
lintian -I --pedantic "$pkg"/deb/*.deb >"$TEST_DIR/lintian.txt" 2>&1 || true  # judged by its output
grep -v '^running with root privileges is not recommended!$' "$TEST_DIR/lintian.txt" >"$TEST_DIR/lintian.findings" || true
[ ! -s "$TEST_DIR/lintian.findings" ] || { cat "$TEST_DIR/lintian.findings"; fail "lintian found the above"; }
if with_rpm; then
  # The -debuginfo RPM is rpm's own make (find-debuginfo), installed by nobody but a debugger.
  mapfile -t rpms < <(find "$pkg/rpm/RPMS" -name '*.rpm' ! -name '*-debuginfo-*' ! -name '*-debugsource-*' | sort)
  [ "${#rpms[@]}" -eq 5 ] || fail "expected 5 RPMs, found ${#rpms[@]}: ${rpms[*]}"
  # From the checkout, where the spec reads the version when it is not given.
  (cd "$SRC" && rpmlint -c packaging/rpm/rpmlint.toml "${rpms[@]}" packaging/rpm/trainctl.spec) >"$TEST_DIR/rpmlint.txt" 2>&1 &&
    rpmlint_rc=0 || rpmlint_rc=$?
  grep -E ': [EWI]: ' "$TEST_DIR/rpmlint.txt" && fail "rpmlint found the above"
  [ "$rpmlint_rc" -eq 0 ] || { cat "$TEST_DIR/rpmlint.txt"; fail "rpmlint exited $rpmlint_rc"; }
  log "rpmlint: $(grep -o '[0-9]* errors, [0-9]* warnings' "$TEST_DIR/rpmlint.txt")"
fi
log "lintian: nothing on ${#debs[@]} packages and their debug symbols"

# --- the SLURM release the plugin packages require ----------------------------------
hex=$(sed -n 's/^#define SLURM_VERSION_NUMBER 0x\([0-9a-fA-F]*\).*/\1/p' /usr/include/slurm/slurm_version.h)
release=$(printf '%d.%02d' "0x${hex:0:2}" "0x${hex:2:2}")
next=$(printf '%d.%02d' "0x${hex:0:2}" "$((0x${hex:2:2} + 1))")
depends=$(dpkg-deb -f "$(deb_of slurm-wlm-trainctl-plugin)" Depends)
grep -qF "slurm-wlm-basic-plugins (>= $release~), slurm-wlm-basic-plugins (<< $next~)" <<<"$depends" ||
  fail "the plugin .deb does not pin SLURM $release: Depends: $depends"
if with_rpm; then
  requires=$(rpm -qp --requires "$(rpm_of slurm-spank-trainctl)")
  for want in "slurm >= $release" "slurm < $next"; do
    grep -qx "$want" <<<"$requires" || fail "the plugin RPM does not require '$want': $requires"
  done
fi
# A plugin package built for another release is refused by dpkg, before anything is
# unpacked: the same package with the next release's pin, as a mismatched build has it.
other=$TEST_DIR/other-release
dpkg-deb -R "$(deb_of slurm-wlm-trainctl-plugin)" "$other"
sed -i "s/^Depends: .*/Depends: slurm-wlm-basic-plugins (>= $next~)/" "$other/DEBIAN/control"
dpkg-deb -b "$other" "$TEST_DIR/other.deb" >/dev/null
if dpkg -i "$TEST_DIR/other.deb" >"$TEST_DIR/other.log" 2>&1; then
  dpkg --purge slurm-wlm-trainctl-plugin >/dev/null 2>&1 || true
  fail "dpkg installed a plugin package built for SLURM $next over SLURM $release"
fi
grep -q "slurm-wlm-basic-plugins (>= $next~); however" "$TEST_DIR/other.log" || { cat "$TEST_DIR/other.log"; fail "dpkg refused for another reason"; }
dpkg --purge slurm-wlm-trainctl-plugin >/dev/null 2>&1 || true  # dpkg leaves it unpacked-but-unconfigured
[ ! -e "/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/slurm-wlm/trainctl_spank.so" ] || fail "the refused plugin was left in PluginDir"
log "plugin packages require SLURM $release (.deb: slurm-wlm-basic-plugins$(with_rpm && echo ', RPM: slurm')); one pinned to $next or later is refused"

# --- the same files in the RPMs as in the .debs --------------------------------------
# Files and symbolic links, with each layout's directories named alike (zsh's completion
# directory too: Debian's vendor-completions, EL's site-functions); each distribution's
# own documents (Debian's changelog, copyright and lintian overrides, EL's licenses and docs) and rpm's
# build-id links left out.
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
deb_files() {
  dpkg-deb -c "$(deb_of "$1")" | awk '$1 ~ /^[-l]/ { print $6 }' | sed 's|^\./|/|' |
    sed -e "s|^/usr/lib/$multiarch/slurm-wlm/|PLUGINDIR/|" -e "s|^/usr/lib/$multiarch/|LIBDIR/|" \
      -e 's|^/usr/lib/python3/dist-packages/|PYDIR/|' -e 's|/trainctlTargets-none\.cmake$|/trainctlTargets-CONFIG.cmake|' \
      -e 's|^/usr/share/zsh/vendor-completions/|ZSHDIR/|' |
    grep -v -e '^/usr/share/doc/' -e '^/usr/share/lintian/' | sort
}
rpm_files() {
  rpm -qp --qf '[%{FILEMODES:perms} %{FILENAMES}\n]' "$(rpm_of "$1")" | awk '$1 ~ /^[-l]/ { print $2 }' |
    sed -e 's|^/usr/lib64/slurm/|PLUGINDIR/|' -e 's|^/usr/lib64/|LIBDIR/|' -e 's|^/usr/lib/python3\.[0-9]*/site-packages/|PYDIR/|' \
      -e 's|/trainctlTargets-relwithdebinfo\.cmake$|/trainctlTargets-CONFIG.cmake|' -e 's|^/usr/share/zsh/site-functions/|ZSHDIR/|' |
    grep -v -e '^/usr/share/doc/' -e '^/usr/share/licenses/' -e '^/usr/lib/\.build-id/' | sort
}
if with_rpm; then
  for pair in libtrainctl0:trainctl-libs libtrainctl-dev:trainctl-devel python3-trainctl:python3-trainctl \
    trainctl:trainctl slurm-wlm-trainctl-plugin:slurm-spank-trainctl; do
    d=${pair%%:*} r=${pair##*:}
    deb_files "$d" >"$TEST_DIR/files.$d.deb"
    rpm_files "$r" >"$TEST_DIR/files.$r.rpm"
    [ -s "$TEST_DIR/files.$d.deb" ] || fail "no files listed for $d"
    diff "$TEST_DIR/files.$d.deb" "$TEST_DIR/files.$r.rpm" >"$TEST_DIR/files.diff" ||
      { cat "$TEST_DIR/files.diff"; fail "the .deb $d and the RPM $r differ (<: .deb only, >: RPM only)"; }
  done
  log "the 5 RPMs carry the same $(cat "$TEST_DIR"/files.*.deb | wc -l) files as the 5 .debs"
fi

# --- the plugstack.conf line names the plugin where the package puts it -------------
# SLURM skips an `optional` line whose file is absent without a word: on EL the
# Debian path would leave every job unsupervised.
plugstack_line_names_plugin() {  # <what> <example's text> <the package's paths>
  local line path
  line=$(grep -m1 '^optional ' <<<"$2") || fail "$1: plugstack.conf.example has no 'optional' line"
  path=$(awk '{ print $2 }' <<<"$line")
  grep -qxF "$path" <<<"$3" || fail "$1: plugstack.conf.example's line names $path, which the package does not install: $(grep trainctl_spank <<<"$3")"
  log "$1: the example's line names $path, the package's plugin"
}
example=usr/share/trainctl/plugstack.conf.example
plugstack_line_names_plugin .deb "$(dpkg-deb --fsys-tarfile "$(deb_of slurm-wlm-trainctl-plugin)" | tar -xO "./$example")" \
  "$(dpkg-deb -c "$(deb_of slurm-wlm-trainctl-plugin)" | awk '{ print $6 }' | sed 's|^\./|/|')"
if with_rpm; then
  plugstack_line_names_plugin RPM "$(rpm2cpio "$(rpm_of slurm-spank-trainctl)" | cpio -i --quiet --to-stdout "./$example")" \
    "$(rpm -qlp "$(rpm_of slurm-spank-trainctl)")"
fi

# --- installed with apt-get ----------------------------------------------------------
mapfile -t deb_paths < <(for p in "${debs[@]}"; do deb_of "$p"; done)
installed=1
apt-get install -y -q --no-install-recommends "${deb_paths[@]}" >"$TEST_DIR/apt-install.log" 2>&1 ||
  { cat "$TEST_DIR/apt-install.log"; fail "apt-get install of the .debs failed"; }
grep -E '^(W|E): ' "$TEST_DIR/apt-install.log" && fail "apt-get warned"
mapfile -t files < <(for p in "${debs[@]}"; do dpkg -L "$p"; done | while read -r f; do [ -f "$f" ] && echo "$f"; done)
log "installed ${#files[@]} files"

version=$(sed -n 's/^#define TRAINCTL_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$/\2/p' "$SRC/libtrainctl/include/trainctl/trainctl.h" | paste -sd.)
[ "$(/usr/bin/trainwatch --version)" = "trainwatch $version" ] || fail "trainwatch --version: $(/usr/bin/trainwatch --version)"
[ "$(/usr/bin/trainctl-run --version)" = "trainctl-run $version" ] || fail "trainctl-run --version"
lib=$(cd / && env -u PYTHONPATH -u TRAINCTL_LIBRARY /usr/bin/python3 -c 'import trainctl, trainctl._native as n
c = trainctl.Controller(signals="none"); assert not c.check(0).exit; print(n.lib()._name)') ||
  fail "Debian's python3 cannot use the installed package"
[ "$lib" = "/usr/lib/$multiarch/libtrainctl.so.0" ] || fail "the installed Python package loaded $lib"
[ "$(pkg-config --modversion trainctl)" = "$version" ] || fail "pkg-config does not find trainctl"
cat >"$TEST_DIR/abi.c" <<'C'
#include <stdio.h>
#include <trainctl/trainctl.h>
int main(void) { printf("%d\n", trainctl_version()); return trainctl_version() == TRAINCTL_VERSION_NUMBER ? 0 : 1; }
C
# shellcheck disable=SC2046  # pkg-config's words
cc -o "$TEST_DIR/abi" "$TEST_DIR/abi.c" $(pkg-config --cflags --libs trainctl) || fail "a C program does not build with pkg-config"
"$TEST_DIR/abi" >/dev/null || fail "the C program built against the installed library does not run"
for page in trainwatch.1 trainctl-run.1 trainctl_spank.8; do
  if command -v man >/dev/null; then
    man -w "${page%.*}" >/dev/null || fail "man ${page%.*}: no page"
  else  # a root without man-db (scripts/testbed): the page is where man would look
    [ -f "/usr/share/man/man${page##*.}/$page.gz" ] || fail "/usr/share/man/man${page##*.}/$page.gz is missing"
  fi
done
log "trainwatch, trainctl-run, import trainctl, a C program (pkg-config) and the man pages work from /usr"

plugstack=$CLUSTER_ETC/plugstack.conf
PLUGSTACK_SAVED=$TEST_DIR/plugstack.conf.saved  # restored by cleanup
cp "$plugstack" "$PLUGSTACK_SAVED"
grep -h '^optional' /usr/share/trainctl/plugstack.conf.example >"$plugstack"  # the admin's one line
# The help whole, then searched (a pipe into grep -q can end srun with SIGPIPE).
help=$(srun --help 2>&1) || fail "srun --help failed with the installed plugin: $help"
grep -q -- '--graceful-exit' <<<"$help" || fail "srun --help does not list --graceful-exit with the installed plugin"
# Before SLURM 23.11 the task process forks and then execs the supervisor, so the
# command can look before that exec (seen under a whole test run's load): it waits for
# its parent to become the supervisor, 10 s at most.
# shellcheck disable=SC2016  # expanded by the task's shell
parent=$(srun -N1 -t1 --kill-switch="$TEST_DIR/KILL" bash -c '
  for _ in $(seq 100); do
    exe=$(readlink /proc/$PPID/exe)
    [ "$exe" != /usr/bin/trainctl-run ] || break
    sleep 0.1
  done
  echo "$KILL_SWITCH $exe"')
[ "$parent" = "$TEST_DIR/KILL /usr/bin/trainctl-run" ] || fail "the task's KILL_SWITCH and parent: '$parent'"
log "the installed plugin: srun --help lists --graceful-exit; a task runs under /usr/bin/trainctl-run"
cp "$PLUGSTACK_SAVED" "$plugstack"

(cd / && /usr/bin/python3 -c 'import trainctl') # leaves byte-code, which removal must take too
apt-get remove --purge -y -q "${debs[@]}" >"$TEST_DIR/apt-remove.log" 2>&1 || { cat "$TEST_DIR/apt-remove.log"; fail "apt-get remove failed"; }
installed=""
grep -E '^(W|E): |warning' "$TEST_DIR/apt-remove.log" && fail "apt-get remove warned"
for f in "${files[@]}"; do [ ! -e "$f" ] || fail "$f is still there after apt-get remove --purge"; done
for d in /usr/lib/python3/dist-packages/trainctl /usr/share/trainctl /usr/include/trainctl "/usr/lib/$multiarch/cmake/trainctl"; do
  [ ! -e "$d" ] || fail "$d is still there after apt-get remove --purge"
done
any_installed && fail "dpkg still lists a trainctl package"
log "PASS: lint-clean .debs$(with_rpm && echo ' and RPMs with the same files'); the .debs install, work from /usr with the local cluster, and go without a trace"
