#!/usr/bin/env bash
# The Python package's loader against another user's swapping link (issue 33), as real
# users: tcloader's checkout sits in a root-owned sticky directory, as a clone in /tmp
# does, so the install-layout candidate beside it is <that directory>/libtrainctl.so.0,
# a name anyone can create there. tcswapper makes it a link and swaps it, as fast as
# they can, between tcloader's own good library and one of theirs whose constructor
# leaves a mark. 60 Python starts of tcloader's: none runs tcswapper's code; each says
# in one line that the link is not loaded. (Before, 4 of 20 starts ran it: at that rate
# 60 starts miss the fault with a chance of 0.8^60, about 2 in a million; each start runs
# beside the swapper spinning on one core, so more would cost the whole test command.)
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

run_as_user tcloader
id tcswapper >/dev/null 2>&1 || useradd -m -s /bin/bash tcswapper
chmod 755 "$TEST_DIR"
shared=$TEST_DIR/shared  # root's, sticky and writable by all: a /tmp of the test's own
mkdir -m 1777 "$shared"
as_user mkdir -p "$shared/clone/python" "$TEST_DIR/good"
as_user cp -r "$PYTHON_PACKAGES/trainctl" "$shared/clone/python/"
as_user cp "$(readlink -f "$BUILD/lib/libtrainctl.so.0")" "$TEST_DIR/good/libtrainctl.so.0"

evil=$shared/evil
runuser -u tcswapper -- mkdir -m 755 "$evil"
cat >"$TEST_DIR/evil.c" <<C
#include <fcntl.h>
#include <unistd.h>
__attribute__((constructor)) static void mark(void) {
  int fd = open("$evil/ran", O_WRONLY | O_APPEND);
  if (fd >= 0) { (void)!write(fd, "ran\n", 4); close(fd); }
}
C
cc -shared -fPIC -o "$TEST_DIR/evil.so" "$TEST_DIR/evil.c" || fail "cannot build the attacker's library"
install -o tcswapper -m 644 "$TEST_DIR/evil.so" "$evil/libtrainctl.so.0"
# shellcheck disable=SC2016  # expanded by the inner sh
runuser -u tcswapper -- sh -c ': >"$1/ran" && chmod 666 "$1/ran"' sh "$evil"

# The swapper: replaces the link atomically (rename over it), good, evil, good, ...
runuser -u tcswapper -- timeout 300 python3 -c '
import os, sys
shared, good, evil = sys.argv[1:]
tmp = os.path.join(shared, ".swap%d" % os.getpid())
while True:
    for target in (good, evil):
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        os.symlink(target, tmp)
        os.replace(tmp, os.path.join(shared, "libtrainctl.so.0"))
' "$shared" "$TEST_DIR/good/libtrainctl.so.0" "$evil/libtrainctl.so.0" &
swapper=$!
stop_swapper() { kill "$swapper" 2>/dev/null || true; pkill -u tcswapper 2>/dev/null || true; }
trap 'stop_swapper; cleanup' EXIT
wait_for 10 "the swapper's link" test -L "$shared/libtrainctl.so.0"

starts=60 refused=0
for _ in $(seq 1 "$starts"); do
  out=$(cd / && runuser -u tcloader -- env -u TRAINCTL_LIBRARY PYTHONPATH="$shared/clone/python" LD_LIBRARY_PATH= \
    /usr/bin/python3 -c 'import trainctl._native as n; n.lib()' 2>&1) || true
  grep -q "$shared/libtrainctl.so.0: not loaded: $shared/libtrainctl.so.0 belongs to uid $(id -u tcswapper)" <<<"$out" &&
    refused=$((refused + 1))
done
stop_swapper
ran=$(wc -l <"$evil/ran")
log "$starts starts of tcloader's Python: tcswapper's code ran in $ran, the link was refused in $refused"
[ "$ran" -eq 0 ] || fail "tcswapper's library ran in $ran of $starts starts"
[ "$refused" -eq "$starts" ] || fail "the link was refused with its reason in only $refused of $starts starts: $out"
log "PASS: 0 of $starts starts ran another user's code through a swapping link; each refused it in one line"
