#!/usr/bin/env bash
# trainwatch as alice, with mallory on the same node: a state directory mallory made
# (or one anyone can write), a spool item mallory planted with her own receiver as the
# sink, planted temporary-file symlinks, HOME unset. Each is refused or inert: one
# line and exit 3 where refused, nothing reaches mallory's receiver, no file of alice's
# is overwritten, and alice's own alert goes to alice's sink.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
start_alert_servers
TW=$BUILD/bin/trainwatch
getent group mallory >/dev/null || groupadd mallory
id mallory >/dev/null 2>&1 || useradd -m -g mallory -s /bin/bash mallory
getent group alice >/dev/null || groupadd alice
id alice >/dev/null 2>&1 || useradd -m -g alice -s /bin/bash alice
as() {
  local who=$1
  shift
  runuser -u "$who" -- env PATH="$PATH" HOME="$(getent passwd "$who" | cut -d: -f6)" bash -c 'umask 077; exec "$@"' bash "$@"
}
chmod 755 "$TEST_DIR"
shared=$TEST_DIR/tmp  # like /tmp: anyone may make a name here
mkdir -m 1777 "$shared"
n_req() { find "$REQDIR" -name '*.json' | wc -l; }
as alice mkdir -p /home/alice/data
victim=/home/alice/precious.txt
as alice bash -c "echo precious >$victim"
# alice's sink and mallory's receiver are the same HTTP server; the path tells them apart.
alice_hook="webhook:env:ALICE_HOOK"
export ALICE_HOOK="http://127.0.0.1:$HTTP_PORT/alice"

log "1. a state directory mallory made, and one anyone can write: refused before any check runs"
for mode in hers open; do
  dir=$shared/tw-$mode
  as mallory mkdir "$dir"
  [ "$mode" = open ] && as mallory chmod 777 "$dir"
  [ "$mode" = hers ] && as mallory chmod 755 "$dir"
  as mallory mkdir -p "$dir/spool"
  as mallory chmod 777 "$dir/spool"
  as mallory bash -c "cat >$dir/spool/1-planted.json" <<JSON
{"sink":"webhook:http://127.0.0.1:$HTTP_PORT/mallory","message":{"check":"fs","target":"x","state":"FIRING","status":"CRITICAL","text":"t","host":"h","time":1},"tries":0}
JSON
  rc=0
  out=$(as alice env ALICE_HOOK="$ALICE_HOOK" "$TW" fs --path /home/alice/data --min-free 1P --state-dir "$dir" \
    --notify "$alice_hook" 2>&1) || rc=$?
  { [ "$rc" = 3 ] && [ "$(wc -l <<<"$out")" = 1 ]; } || fail "$mode directory: exit $rc, output: $out"
  grep -q "state directory $dir" <<<"$out" || fail "the refusal does not name the directory: $out"
done
[ "$(n_req)" = 0 ] || fail "something was posted: $(ls "$REQDIR")"

log "2. alice's own directory with mallory's planted spool item (as an older version spooled it): it goes nowhere"
dir=$shared/tw-alice
as alice mkdir -m 700 "$dir"
as alice mkdir -m 700 "$dir/spool"
as alice bash -c "cat >$dir/spool/1-planted.json" <<JSON
{"sink":"webhook:http://127.0.0.1:$HTTP_PORT/mallory","message":{"check":"fs","target":"x","state":"FIRING","status":"CRITICAL","text":"t","host":"h","time":1},"tries":0}
JSON
# Symlinks exactly where this run writes its temporary files: bash's $$ is the pid
# trainwatch gets when bash execs it.
rc=0
# shellcheck disable=SC2016  # expanded by alice's shell
as alice env ALICE_HOOK="$ALICE_HOOK" bash -c 'for f in alerts.json history.json fs-history.json; do
    ln -sf "$1" "$2/$f.tmp.$(hostname).$$"; done
  exec "$3" fs --path /home/alice/data --min-free 1P --state-dir "$2" --notify "$4"' \
  bash "$victim" "$dir" "$TW" "$alice_hook" >"$TEST_DIR/out2" 2>"$TEST_DIR/err2" || rc=$?
[ "$rc" = 2 ] || fail "alice's own check: exit $rc: $(cat "$TEST_DIR/err2")"
if grep -rqs --include='*.path' mallory "$REQDIR"; then fail "mallory's receiver got an alert"; fi
grep -rqx --include='*.path' '/alice' "$REQDIR" || fail "alice's alert did not reach alice's sink"
grep -q "not configured now" "$TEST_DIR/err2" || fail "the planted item was not reported: $(cat "$TEST_DIR/err2")"
[ "$(cat "$victim")" = precious ] || fail "a planted symlink made trainwatch overwrite $victim"

log "3. HOME unset: no /tmp fallback"
rc=0
out=$(runuser -u alice -- env -i PATH="$PATH" "$TW" fs --path /home/alice/data 2>&1) || rc=$?
{ [ "$rc" = 3 ] && grep -q "HOME is not set" <<<"$out"; } || fail "HOME unset: exit $rc, output: $out"
[ ! -e /tmp/.local/state/trainwatch ] || fail "a /tmp state directory appeared"
log "PASS: mallory's and open state directories refused, her spool item and symlinks inert, no /tmp fallback"
