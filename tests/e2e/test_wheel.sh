#!/usr/bin/env bash
# e2e-torch: the wheel's template run from a venv under real torchrun, on each SLURM release
# The wheel as a user without root meets it (issue 30): one file from scripts/package
# --wheel with the library, the Python package and the three tools.
#   1. Its tag is manylinux_2_N with N the glibc README.md promises (2.28: Enterprise
#      Linux 8), README's pip line names this very file, and no file in it asks for a
#      glibc symbol newer than 2.N or for a library outside glibc.
#   2. As an unprivileged user: fresh venvs of pyenv's Pythons and of Debian's take it
#      with `pip install --no-index`; the tools are on the venv's PATH and answer
#      --version; a Controller sees a kill switch through the library inside the wheel;
#      `trainctl.hf` is there without transformers; pip uninstall leaves nothing.
#   3. A real job from the Debian Python's venv, no plugin: the template with trainctl-run
#      from PATH (the venv's), torchrun 2x2, a deadline save in array task 1 and task 2
#      resumed from it.
#   4. The same wheel in the Debian 11 root (scripts/testbed): `trainctl-run -- true`
#      and the kill-switch check, as a user there.
# In a newer release's root (scripts/testbed test: SLURM 24.11, 26.05) the same wheel,
# built for Debian 11 and its SLURM 20.11, runs parts 1 to 3 on that release's cluster.
# e2e-core: all
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
trap cleanup EXIT

# --- 1. the wheel and what its files need ---------------------------------------------
# TRAINCTL_WHEEL_PREBUILT: the test command's packages lane builds the wheel first and
# leaves its status in wheel.status there. Run alone, the test builds its own; in a
# release's root, where no Debian 11 root can be made, it needs one built.
prebuilt=${TRAINCTL_WHEEL_PREBUILT:-}
release=${TRAINCTL_TESTBED_RELEASE:-}
if [ -n "$release" ] && [ -z "$prebuilt" ]; then
  log "SKIP: in $release's root this test takes the wheel built outside (TRAINCTL_WHEEL_PREBUILT, which scripts/test sets); none was given"
  rm -rf "$TEST_DIR"
  exit 77
fi
if [ -n "$prebuilt" ]; then
  log "waiting for the wheel built in the background in $prebuilt"
  wait_for 1200 "scripts/package --wheel in $prebuilt to finish" test -s "$prebuilt/wheel.status"
  cp "$prebuilt/wheel.log" "$TEST_DIR/package.log"
  [ "$(cat "$prebuilt/wheel.status")" = 0 ] || { cat "$TEST_DIR/package.log"; fail "scripts/package --wheel failed in the background"; }
else
  TRAINCTL_PACKAGE_DIR=$TEST_DIR/pkg bash "$SRC/scripts/package" --wheel >"$TEST_DIR/package.log" 2>&1 ||
    { cat "$TEST_DIR/package.log"; fail "scripts/package --wheel failed"; }
fi
# Found by name in its folder (in a release's root the log's paths are the host's).
wheel=$(basename "$(sed -n 's/^wheel: \([^ ]*\).*/\1/p' "$TEST_DIR/package.log")")
wheel=${prebuilt:-$TEST_DIR/pkg}/wheel/$wheel
[ -f "$wheel" ] || fail "scripts/package printed no wheel: $(cat "$TEST_DIR/package.log")"
name=$(basename "$wheel")
[[ $name =~ ^trainctl-[0-9.]+-py3-none-manylinux_2_([0-9]+)_$(uname -m)\.whl$ ]] ||
  fail "the wheel's name is not trainctl-VERSION-py3-none-manylinux_2_N_$(uname -m).whl: $name"
tag_minor=${BASH_REMATCH[1]}
# What README.md promises a stranger: the glibc in its platform line, and this file's name.
promised=$(sed -n 's/.*needs Python 3\.8+ and glibc 2\.\([0-9][0-9]*\)+ .*/\1/p' "$SRC/README.md")
[ -n "$promised" ] || fail "README.md has no line 'needs Python 3.8+ and glibc 2.N+'"
[ "$tag_minor" = "$promised" ] || fail "$name is tagged for glibc 2.$tag_minor; README.md promises 2.$promised"
grep -qF "pip install $name" "$SRC/README.md" || fail "README.md's quick start does not install $name"
cp "$wheel" "$TEST_DIR/" && wheel=$TEST_DIR/$name  # the user's copy, readable by the user
mkdir "$TEST_DIR/unzipped"
python3 -m zipfile -e "$wheel" "$TEST_DIR/unzipped"
for f in trainctl/libtrainctl.so.0 trainctl/__init__.py trainctl/hf.py trainctl/py.typed; do
  [ -f "$TEST_DIR/unzipped/$f" ] || fail "the wheel does not carry $f"
done
scripts_dir=$(echo "$TEST_DIR"/unzipped/trainctl-*.data/scripts)
for t in trainctl trainctl-run trainwatch; do
  [ -f "$scripts_dir/$t" ] || fail "the wheel does not carry $t in its scripts data"
done
# Every ELF file, checked here and not by scripts/package's own reckoning of the tag.
elves=0
while IFS= read -r -d '' f; do
  [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
  elves=$((elves + 1))
  newest=$(objdump -T "$f" | grep -o 'GLIBC_2\.[0-9]*' | cut -d. -f2 | sort -n | tail -n 1)
  [ -n "$newest" ] || fail "${f#"$TEST_DIR"/unzipped/}: no glibc symbol versions read"
  [ "$newest" -le "$tag_minor" ] || fail "${f#"$TEST_DIR"/unzipped/} needs GLIBC_2.$newest, newer than its tag (2.$tag_minor)"
  needed=$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
    grep -vxE 'libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|ld-linux-x86-64\.so\.2' || true)
  [ -z "$needed" ] || fail "${f#"$TEST_DIR"/unzipped/} needs $needed, outside glibc (manylinux allows only glibc's libraries here)"
done < <(find "$TEST_DIR/unzipped" -type f -print0)
[ "$elves" -eq 4 ] || fail "found $elves ELF files in the wheel, not 4 (the library and three tools)"
log "$name: $(($(stat -c %s "$wheel") / 1024)) KiB; its 4 ELF files need glibc 2.$tag_minor at most and no library outside glibc"

# --- 2. venvs as an unprivileged user ---------------------------------------------------
run_as_user tcwheel
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
trainctl.hf  # the lazy submodule: there, and without transformers
assert "transformers" not in sys.modules, "trainctl.hf imported transformers"
print("%d.%d: trainctl %s, exit: %s, library %s" % (sys.version_info[:2] + (trainctl.version(), d.reason, lib)))
PY
# venv_check PYTHON DIR|--user WHEEL CHECK: what a user does with the wheel, in a new
# venv DIR or with `pip install --user` (into $HOME/.local), run as the user with a clean
# environment (nothing points at the build tree or the checkout).
cat >"$TEST_DIR/venv_check.sh" <<'SH'
set -euo pipefail
py=$1 where=$2 wheel=$3 check=$4
if [ "$where" = --user ]; then
  prefix=$HOME/.local python=$py
  "$python" -m pip install --user --no-index --disable-pip-version-check -q "$wheel"
else
  prefix=$where python=$where/bin/python
  "$py" -m venv "$prefix"
  "$python" -m pip install --no-index --disable-pip-version-check -q "$wheel"
fi
for t in trainctl trainctl-run trainwatch; do
  [ "$(cd / && PATH=$prefix/bin:/usr/bin:/bin type -P "$t")" = "$prefix/bin/$t" ] || { echo "$t is not in $prefix/bin"; exit 1; }
  v=$("$prefix/bin/$t" --version) || { echo "$t --version failed"; exit 1; }
  case $v in "$t "[0-9]*) ;; *) echo "$t --version said: $v"; exit 1 ;; esac
done
for f in share/trainctl/slurm_templates/train.slurm share/trainctl/cron/cron-chain.sh share/man/man1/trainctl-run.1 \
  share/bash-completion/completions/trainctl share/zsh/vendor-completions/_trainctl share/fish/vendor_completions.d/trainctl.fish; do
  [ -f "$prefix/$f" ] || { echo "no $f in $prefix"; exit 1; }
done
mkdir -p "$HOME/run"
(cd / && "$python" "$check" "$HOME/run")
"$python" -m pip uninstall -y -q trainctl
# (pip leaves the emptied share/ folders, as it does for any package's data; from a
# --user install it removes the folders it made.)
left=$(find "$prefix" ! -type d \( -path "$prefix/share/*" -o -path "$prefix/bin/trainctl*" -o -path "$prefix/bin/trainwatch" \
  -o -path "$prefix/lib/python3*/site-packages/trainctl*" \))
[ -z "$left" ] || { echo "pip uninstall left $left"; exit 1; }
SH
user_env=(env -i HOME="/home/$TEST_USER" PATH=/usr/bin:/bin LANG=C.UTF-8)
# pyenv's Pythons live in root's home (mode 700): a user's own Python lives in theirs. A
# private mount namespace shows the user root's pyenv at its own path (a venv's python
# names its interpreter by that path) and nothing else of /root.
pyenv_root=/root/.pyenv
with_pyenv() {
  mkdir -p "$TEST_DIR/pyenv-view"
  # shellcheck disable=SC2016  # expanded by the inner bash
  unshare --mount --propagation private bash -c 'set -e
    mount --bind "$1" "$2" && mount -t tmpfs -o mode=755,size=1m none /root
    mkdir /root/.pyenv && mount --bind "$2" /root/.pyenv
    shift 2 && exec "$@"' sh "$pyenv_root" "$TEST_DIR/pyenv-view" "$@"
}
# user_check PYTHON DIR|--user: venv_check as the user, with a HOME of its own.
user_check() {
  local home=$TEST_DIR/home$n
  mkdir -p "$home" && chown "$TEST_USER" "$home"
  local run=(runuser -u "$TEST_USER" -- "${user_env[@]}" HOME="$home" bash "$TEST_DIR/venv_check.sh" "$1" "$2"
    "$wheel" "$TEST_DIR/check.py")
  case $1 in "$pyenv_root"/*) with_pyenv "${run[@]}" ;; *) "${run[@]}" ;; esac
}
mapfile -t pyenv_pythons < <(for p in "$pyenv_root"/versions/3.*/bin/python3; do
  [ -x "$p" ] && "$p" -c 'import sys; sys.exit(sys.version_info < (3, 8))' 2>/dev/null && echo "$p"
done | sort -V | sed -n '1p;$p' | uniq)  # the oldest and the newest 3.8+
n=0
for py in "${pyenv_pythons[@]}" /usr/bin/python3; do
  n=$((n + 1))
  out=$(user_check "$py" "$TEST_DIR/venv$n" 2>&1) || fail "a venv of $py: $out"
  log "as $TEST_USER, a venv of $py: $out"
done
# This machine's pyenv (not in the releases' roots) has 3.8 to 3.13; --user with its
# newest (Debian's own Python refuses --user: PEP 668, externally managed).
if [ -z "$release" ]; then
  [ "$n" -ge 3 ] || fail "no pyenv Python 3.8+ under $pyenv_root"
  n=$((n + 1))
  out=$(user_check "${pyenv_pythons[-1]}" --user 2>&1) || fail "pip install --user with ${pyenv_pythons[-1]}: $out"
  log "as $TEST_USER, pip install --user with ${pyenv_pythons[-1]}: $out"
fi

# --- 3. a job from a venv, no plugin ----------------------------------------------------
# Debian's Python has torch: its venv sees it (--system-site-packages) and takes the wheel.
venv=$TEST_DIR/jobvenv
# shellcheck disable=SC2016  # expanded by the inner sh
runuser -u "$TEST_USER" -- "${user_env[@]}" sh -c '/usr/bin/python3 -m venv --system-site-packages "$1" &&
  "$1/bin/python" -m pip install --no-index --disable-pip-version-check -q "$2"' sh "$venv" "$wheel" ||
  fail "the job's venv could not take the wheel"
where=$(cd / && runuser -u "$TEST_USER" -- "${user_env[@]}" "$venv/bin/python" -c 'import trainctl; print(trainctl.__file__)')
[[ $where == "$venv/"* ]] || fail "the job's venv imports trainctl from $where"
cp "$SRC/slurm_templates/train.slurm" "$SRC/slurm_templates/train_example.py" "$TEST_DIR/"
chown "$TEST_USER" "$TEST_DIR"/train.slurm "$TEST_DIR"/train_example.py
cd "$TEST_DIR"
# Submitted without the venv, the template says what is missing and ends (exit 2).
nopath=$(id=$(runuser -u "$TEST_USER" -- "${user_env[@]}" SLURM_CONF="$CLUSTER_ETC/without-plugin/slurm.conf" \
  sbatch --parsable -J nopath -o "$TEST_DIR/nopath.out" train.slurm) && echo "${id%%;*}") || fail "sbatch of the template was refused"
echo "$nopath" >>"$TEST_DIR/.submitted"
wait_for 60 "the job without trainctl-run on PATH to end" job_ended "$nopath"
grep -q "^train.slurm: trainctl-run is not on PATH: submit with the environment" "$TEST_DIR/nopath.out" ||
  fail "without trainctl-run on PATH the template said: $(cat "$TEST_DIR/nopath.out")"
[ "$(job_field "$nopath" ExitCode)" = 2:0 ] || fail "without trainctl-run on PATH the template's job ended $(job_field "$nopath" ExitCode)"
# What a user's shell has after `source venv/bin/activate`: the venv's bin first. sbatch
# hands the environment to the job, so the template finds the venv's trainctl-run.
job=$(id=$(runuser -u "$TEST_USER" -- "${user_env[@]}" PATH="$venv/bin:/usr/bin:/bin" VIRTUAL_ENV="$venv" \
  SLURM_CONF="$CLUSTER_ETC/without-plugin/slurm.conf" TRAINCTL_BAD_NODES="$TRAINCTL_BAD_NODES" \
  LAUNCHER=torchrun TORCHRUN="$venv/bin/python $TORCHRUN_SHIM" RDZV=static GPUS_PER_NODE=2 GRACEFUL_EXIT=1 \
  TRAIN_SCRIPT="$TEST_DIR/train_example.py" TRAIN_ARGS="--steps 100000 --step-time 0.05" \
  sbatch --parsable --array=1-2%1 --time=2 -J wheel train.slurm) && echo "${id%%;*}") ||
  fail "sbatch of the template was refused"
echo "$job" >>"$TEST_DIR/.submitted"
log "submitted the template from the venv as array $job (trainctl-run from $venv/bin)"
ev=$TEST_DIR/logs/wheel
template_deadline_then_resume "$ev"
touch "$TEST_DIR/kill-switch-wheel"
all_done() { [ -z "$(squeue -h -j "$job" 2>/dev/null)" ]; }
end=$((SECONDS + 120))
until all_done; do
  if [ "$SECONDS" -ge "$end" ]; then
    # Where the ranks are that did not end: trainctl stacks, as the user would ask.
    running=$(squeue -h -j "$job" -t RUNNING -o %i | head -n 1)
    log "the array has not ended 120 s after the kill switch; trainctl stacks $running says:"
    runuser -u "$TEST_USER" -- "${user_env[@]}" SLURM_CONF="$CLUSTER_ETC/without-plugin/slurm.conf" \
      "$venv/bin/trainctl" stacks "$running" 2>&1 | head -n 60 || true
    fail "timed out after 120s waiting for: the array to end after the kill switch"
  fi
  sleep 0.5
done
[ "$(template_events_count "$ev" exit)" -eq 8 ] || fail "task 2 did not exit on the kill switch ($(template_events_count "$ev" exit) exits)"
grep -q "supervised by trainctl-run" "$TEST_DIR"/wheel-*.out || fail "the template did not say it used trainctl-run"
# Built against Debian 11's SLURM 20.11, the tools read a newer cluster's job records
# through scontrol, and say so once per task.
slurm=$(sinfo -V | grep -o '[0-9][0-9]*\.[0-9][0-9]*' | head -n 1)
if [ "$slurm" != 20.11 ]; then
  line=$(grep -h -m 1 "EndTime is read through scontrol, not libslurm" "$TEST_DIR"/wheel-*.out) ||
    fail "the wheel's trainctl-run on SLURM $slurm did not say how it reads the job's EndTime"
  log "SLURM $slurm: ${line#*: }"
fi
# Who requeues a preempted job is the node's SLURM's to decide, not the one the wheel
# was built against (20.11): trainctl version says which it found and what follows.
release_here=$(sinfo -V | grep -o '[0-9][0-9]*\.[0-9][0-9]\.[0-9][0-9]*' | head -n 1)
version=$(cd / && runuser -u "$TEST_USER" -- "${user_env[@]}" SLURM_CONF="$CLUSTER_ETC/without-plugin/slurm.conf" \
  "$venv/bin/trainctl" version) || fail "the wheel's trainctl version failed: $version"
case $release_here in 2[0-3].* | 24.0[0-4].*) who="trainctl-run --batch requeues it" ;; *) who="trainctl-run --batch leaves that to it" ;; esac
grep -q "^SLURM $release_here on this node (scontrol --version): .*$who" <<<"$version" ||
  fail "the wheel's trainctl version on SLURM $release_here: $version"
log "the wheel's trainctl version: $(tail -n 1 <<<"$version")"
log "task 2 stopped at the kill switch; all under the venv's trainctl-run"

if [ -n "$release" ]; then
  log "PASS: $name installs without root and runs a supervised job from a venv on $release's SLURM"
  exit 0
fi

# --- 4. Debian 11 (glibc 2.31) ----------------------------------------------------------
root=$(bash "$SRC/scripts/testbed" path bullseye)
[ -f "$root/.trainctl-root-complete" ] || bash "$SRC/scripts/testbed" root bullseye >"$TEST_DIR/bullseye-root.log" 2>&1 ||
  { tail -n 20 "$TEST_DIR/bullseye-root.log"; fail "scripts/testbed root bullseye failed"; }
check_dir=$root/var/tmp/trainctl-wheel-check
rm -rf "$check_dir" && mkdir -p "$check_dir"
cp "$wheel" "$TEST_DIR/check.py" "$check_dir/"
# shellcheck disable=SC2016  # expanded inside the root
out=$(bash "$SRC/scripts/testbed" shell bullseye sh -c 'set -e
  id tcwheel >/dev/null 2>&1 || useradd -m tcwheel
  chown -R tcwheel "$1"
  exec runuser -u tcwheel -- env -i HOME=/home/tcwheel PATH=/usr/bin:/bin sh -c "set -e
    cd \$1 && python3 -m venv venv && venv/bin/python -m pip install --no-index -q ./$2
    venv/bin/trainctl-run -- true && echo trainctl-run -- true: \$?
    venv/bin/python check.py \$1" sh "$1"' sh /var/tmp/trainctl-wheel-check "$name" 2>&1) ||
  { rm -rf "$check_dir"; fail "in Debian 11: $out"; }
rm -rf "$check_dir"
glibc=$(chroot "$root" getconf GNU_LIBC_VERSION) || fail "getconf GNU_LIBC_VERSION failed in Debian 11"
log "in Debian 11 ($glibc): $(echo "$out" | tr '\n' ' ')"
log "PASS: $name ($(($(stat -c %s "$wheel") / 1024)) KiB, glibc 2.$tag_minor+) installs without root, runs a supervised job from a venv, and runs on Debian 11"
