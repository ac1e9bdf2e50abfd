#!/usr/bin/env bash
# trainwatch fs with a hung mount: a FUSE filesystem whose statfs never answers. That
# path is UNKNOWN within its --timeout while the other path is still checked, and the
# watchdog itself returns. The hung mount is released afterwards (fusectl abort, lazy
# unmount) and the FUSE server stopped by pid.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
TW=$BUILD/bin/trainwatch
mnt=$TEST_DIR/hung
mkdir -p "$mnt" "$TEST_DIR/ok"
/usr/bin/python3 "$SRC/tests/e2e/hung_fs.py" "$mnt" &
fuse_pid=$!
release() {
  local conn
  mountpoint -q /sys/fs/fuse/connections || mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null || true
  conn=$(($(stat -c '%d' "$mnt" 2>/dev/null || echo 0) & 0xff))
  [ -e "/sys/fs/fuse/connections/$conn/abort" ] && echo 1 >"/sys/fs/fuse/connections/$conn/abort"
  umount -l "$mnt" 2>/dev/null || true
  # Its statfs thread never returns, so the server cannot end on its own: KILL it.
  kill -9 "$fuse_pid" 2>/dev/null || true
  wait "$fuse_pid" 2>/dev/null || true
}
on_exit() {
  local rc=$?
  release
  set +e  # errexit would end this handler at the next line, before cleanup
  (exit "$rc")
  cleanup
}
trap on_exit EXIT
mounted() { grep -q " $mnt fuse" /proc/mounts; }
wait_for 20 "the FUSE mount" mounted
# The connection number must be read before statfs hangs: stat of the mount point
# itself goes through getattr, which answers.
conn=$(($(stat -c '%d' "$mnt") & 0xff))
log "FUSE mount up (connection $conn); statfs on it will hang"

start=$(date +%s.%N)
rc=0
out=$(timeout 60 "$TW" fs --path "$mnt" --timeout 2s --path "$TEST_DIR/ok" --min-free 1K --state-dir "$TEST_DIR/state") || rc=$?
took=$(python3 -c "import sys,time; print('%.1f' % (time.time() - float(sys.argv[1])))" "$start")
echo "$out"
[ "$rc" = 3 ] || fail "exit $rc, expected 3 (UNKNOWN)"
grep -q "^FS UNKNOWN - $mnt: statfs did not answer within 2s" <<<"$out" || fail "the hung path was not UNKNOWN"
grep -q "^FS OK - $TEST_DIR/ok:" <<<"$out" || fail "the healthy path was not checked"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 10 else 1)" "$took" || fail "took $took s"
log "PASS: hung mount UNKNOWN after $took s, the other path checked, the mount released"
