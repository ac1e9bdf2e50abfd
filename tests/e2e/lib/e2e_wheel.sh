# shellcheck shell=bash disable=SC2153  # TEST_DIR and the other globals are set by lib.sh
# The wheel a user without root installs (scripts/package --wheel).
# Sourced by tests/e2e/lib.sh: functions only, nothing runs when it is sourced.

# the_wheel: sets WHEEL to the wheel's path: the one the test command's packages lane
# builds beside the tests (TRAINCTL_WHEEL_PREBUILT, waited for), else one built here
# into TEST_DIR/pkg (a Debian 11 root: minutes).
the_wheel() {
  local dir=${TRAINCTL_WHEEL_PREBUILT:-}
  if [ -n "$dir" ]; then
    log "waiting for the wheel built in the background in $dir"
    wait_for 2400 "scripts/package --wheel in $dir to finish" test -s "$dir/wheel.status"
    [ "$(cat "$dir/wheel.status")" = 0 ] || fail "scripts/package --wheel failed in the background: $(tail -n 5 "$dir/wheel.log")"
  else
    dir=$TEST_DIR/pkg
    TRAINCTL_PACKAGE_DIR=$dir bash "$SRC/scripts/package" --wheel >"$TEST_DIR/package.log" 2>&1 ||
      { cat "$TEST_DIR/package.log"; fail "scripts/package --wheel failed"; }
  fi
  local wheels=("$dir"/wheel/trainctl-*.whl)
  [ -f "${wheels[0]}" ] || fail "no wheel in $dir/wheel"
  # shellcheck disable=SC2034  # read by the tests
  WHEEL=${wheels[0]}
}
