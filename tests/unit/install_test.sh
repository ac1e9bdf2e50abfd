#!/usr/bin/env bash
# `cmake --install` gives a prefix where `import trainctl` works with the installed
# library and no build tree, and a C program compiles against the installed header.
set -euo pipefail
build=$1
prefix=$(mktemp -d /tmp/trainctl-install-XXXXXX)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
cd "$prefix"
PYTHONPATH=$prefix/lib/python3/dist-packages python3 - "$prefix" <<'PY'
import sys, trainctl, trainctl._native as n
prefix = sys.argv[1]
lib = n.lib()
assert lib._name.startswith(prefix), "loaded %s, not the installed library" % lib._name
c = trainctl.Controller(signals="none")
assert not c.check(0).exit
c.close()
print("install: import trainctl %s from %s" % (trainctl.version(), lib._name))
PY
printf '#include <trainctl/trainctl.h>\nint main(void){return trainctl_version()==TRAINCTL_VERSION_NUMBER?0:1;}\n' >t.c
cc -I"$prefix/include" t.c -L"$prefix/lib" -l:libtrainctl.so.0 -Wl,-rpath,"$prefix/lib" -o t && ./t
echo "install: a C program builds and links against the installed header and library"

# pkg-config and the CMake package find the same library.
read -ra flags < <(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs trainctl)
cc t.c "${flags[@]}" -Wl,-rpath,"$prefix/lib" -o t_pc && ./t_pc
grep -qx "prefix=$prefix" "$prefix/lib/pkgconfig/trainctl.pc" || { echo "install: trainctl.pc does not name the install prefix"; exit 1; }
echo "install: pkg-config --cflags --libs trainctl builds the same program"
mkdir consumer
cp t.c consumer/t.c
cat >consumer/CMakeLists.txt <<'CMAKE'
cmake_minimum_required(VERSION 3.18)
project(consumer C)
find_package(trainctl 0.1 CONFIG REQUIRED)
add_executable(t t.c)
target_link_libraries(t PRIVATE trainctl::trainctl)
CMAKE
cmake -S consumer -B consumer/build -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build consumer/build >/dev/null
consumer/build/t
echo "install: find_package(trainctl) gives trainctl::trainctl"

# Completion for the three shells, made from the parsers at build time.
for file in bash-completion/completions/trainctl zsh/vendor-completions/_trainctl fish/vendor_completions.d/trainctl.fish; do
  grep -q -e 'hang-timeout' "$prefix/share/$file" || { echo "install: no completion $file with trainctl run's options"; exit 1; }
done
echo "install: completion for bash, zsh and fish"

# The man pages are installed and render without troff warnings.
for page in man1/trainwatch.1 man1/trainctl-run.1 man1/trainctl.1 man1/trainctl-status.1 man1/trainctl-stacks.1 \
  man1/trainctl-report.1 man1/trainctl-bad-nodes.1 man1/trainctl-lint.1 man1/trainctl-drill.1 man8/trainctl_spank.8; do
  [ -f "$prefix/share/man/$page" ] || { echo "install: no $page"; exit 1; }
  warnings=$(groff -man -ww -z "$prefix/share/man/$page" 2>&1)
  [ -z "$warnings" ] || { echo "install: $page: $warnings"; exit 1; }
done
grep -qF 'save\-marker' "$prefix/share/man/man1/trainwatch.1" || { echo "install: trainwatch.1 lacks the subcommands' options"; exit 1; }
# One page per verb, named as man looks it up (trainctl-status(1), as git-status(1)).
grep -q '^\.TH TRAINCTL-STATUS "1"' "$prefix/share/man/man1/trainctl-status.1" || { echo "install: trainctl-status.1 is not that page"; exit 1; }
# trainctl_spank(8)'s options come from the plugin's table: every one, and their number.
spank8=$prefix/share/man/man8/trainctl_spank.8
for option in graceful-exit kill-switch save-switch graceful-signal on-notice hang-timeout hang-action hang-phase-timeout; do
  roff_name="\\-\\-${option//-/\\-}"  # --kill-switch as roff writes it: \-\-kill\-switch
  grep -qF -e ".BI $roff_name= " -e ".BR $roff_name [=" "$spank8" || { echo "install: trainctl_spank.8 lacks --$option"; exit 1; }
done
# The count in words is the number of options the page lists (the plugin's rows of the option table).
listed=$(sed -n '/^\.SH OPTIONS/,/^\.SH [^O]/p' "$spank8" | grep -cE '^\.B[IR] \\-\\-') || true
words=(no one two three four five six seven eight nine ten)  # more than ten in digits, as the page writes them
[ "$listed" -ge 8 ] || { echo "install: trainctl_spank.8 lists $listed options"; exit 1; }
count=${words[$listed]:-$listed}
grep -q "adds $count options" "$spank8" || { echo "install: trainctl_spank.8 does not count its $listed options: $(grep adds "$spank8")"; exit 1; }
! grep -q "%PLUGIN" "$spank8" || { echo "install: trainctl_spank.8 kept a marker"; exit 1; }
echo "install: man pages for trainwatch, trainctl-run and the plugin"
