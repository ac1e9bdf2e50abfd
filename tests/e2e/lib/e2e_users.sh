# shellcheck shell=bash disable=SC2153  # TEST_DIR and the other globals are set by lib.sh
# Unprivileged users for the tests: the job's user, a teammate, another user of the nodes.
# Sourced by tests/e2e/lib.sh: functions only, nothing runs when it is sourced.

# Real users are never root. run_as_user NAME: from here on the test's jobs run as
# NAME (made if missing, no special groups), who owns TEST_DIR; as_user COMMAND...
# runs one command as NAME with the cluster's environment.
run_as_user() {
  TEST_USER=$1
  id "$TEST_USER" >/dev/null 2>&1 || useradd -m -s /bin/bash "$TEST_USER"
  chown -R "$TEST_USER" "$TEST_DIR"
  # shellcheck disable=SC2034  # read by the tests
  TEST_UID=$(id -u "$TEST_USER")
}
as_user() {
  runuser -u "$TEST_USER" -- env SLURM_CONF="$SLURM_CONF" PYTHONPATH="$PYTHONPATH" PATH="$PATH" \
    TRAINCTL_LOG_DIR="$TRAINCTL_LOG_DIR" TRAINCTL_BAD_NODES="$TRAINCTL_BAD_NODES" "$@"
}
# submit_as_user ARGS...: submit, as TEST_USER.
submit_as_user() {
  local id
  id=$(as_user sbatch --parsable "$@") || fail "sbatch $* was refused for $TEST_USER"
  id=${id%%;*}
  echo "$id" >>"$TEST_DIR/.submitted"
  echo "$id"
}
# make_team_users: alice (the job's owner), bob (her teammate, group tcteam) and mallory
# (another user of the nodes, in no group of theirs), made if this machine lacks them.
make_team_users() {
  getent group tcteam >/dev/null || groupadd tcteam
  getent group alice >/dev/null || groupadd alice
  id alice >/dev/null 2>&1 || useradd -m -g alice -G tcteam -s /bin/bash alice
  id bob >/dev/null 2>&1 || useradd -m -g tcteam -s /bin/bash bob
  getent group mallory >/dev/null || groupadd mallory
  id mallory >/dev/null 2>&1 || useradd -m -g mallory -s /bin/bash mallory
  usermod -a -G tcteam alice
}
# The user's processes left on this machine (every node of the test cluster is here).
user_processes() { [ -z "${TEST_USER:-}" ] || pgrep -u "$TEST_USER" 2>/dev/null | tr '\n' ' ' || true; }
no_user_processes() { [ -z "$(user_processes)" ]; }
