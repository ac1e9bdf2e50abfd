#!/usr/bin/env bash
# trainwatch alerting against real receivers on loopback: mail through an SMTP server
# (headers and body), Slack and webhook JSON through an HTTP server; one alert while a
# check stays failing, one RESOLVED; a receiver that answers 500, 429 with Retry-After,
# hangs, or closes the connection loses nothing (spooled, sent by the next run or
# trainwatch flush); a group-readable --notify-file is refused.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
start_alert_servers
TW=$BUILD/bin/trainwatch
state=$TEST_DIR/state
mail="smtp://127.0.0.1:$SMTP_PORT?from=trainwatch@example.org&to=ops@example.org&to=oncall@example.org"
# URLs are secrets: from the environment, never on the command line (ps shows it).
export HOOK_URL="http://127.0.0.1:$HTTP_PORT/hook/SECRET-TOKEN"
export SLACK_URL="http://127.0.0.1:$HTTP_PORT/services/T0/B0/SLACKSECRET"
hook="webhook:env:HOOK_URL"
slack="slack:env:SLACK_URL"
common=(--state-dir "$state" --notify "$mail" --notify "$hook" --delivery-timeout 3s)
mkdir -p "$TEST_DIR/data"
n_mail() { find "$MAILDIR" -name '*.eml' | wc -l; }
n_req() { find "$REQDIR" -name '*.json' | wc -l; }

log "1. a failing fs check: one mail, one webhook call"
rc=0
"$TW" fs --path "$TEST_DIR/data" --min-free 1P "${common[@]}" --notify "$slack" >"$TEST_DIR/out" 2>"$TEST_DIR/err" || rc=$?
[ "$rc" = 2 ] || fail "exit $rc, expected 2 (CRITICAL)"
[ "$(n_mail)" = 1 ] || fail "expected 1 mail, got $(n_mail)"
[ "$(n_req)" = 2 ] || fail "expected 2 HTTP posts (webhook, slack), got $(n_req)"
eml=$(find "$MAILDIR" -name '*.eml' | head -1)
for h in "^Date: " "^From: trainwatch <trainwatch@example.org>" "^To: ops@example.org, oncall@example.org" \
  "^Subject: \[trainwatch FIRING\] fs $TEST_DIR/data: CRITICAL" "^Message-ID: <" "^X-Envelope-To: ops@example.org,oncall@example.org"; do
  grep -q "$h" "$eml" || fail "mail lacks $h"
done
grep -q "free of" "$eml" || fail "mail body lacks the figures"
python3 - "$REQDIR" <<'PY' || fail "webhook or slack JSON is wrong"
import json, os, sys
bodies = [json.load(open(os.path.join(sys.argv[1], f))) for f in sorted(os.listdir(sys.argv[1])) if f.endswith(".json")]
hook = [b for b in bodies if "check" in b][0]
slack = [b for b in bodies if "text" in b and "check" not in b][0]
assert hook["state"] == "FIRING" and hook["status"] == "CRITICAL" and hook["check"] == "fs", hook
assert "free_bytes" in hook["figures"], hook
assert "FIRING" in slack["text"], slack
PY
if grep -qE "SECRET|SLACKSECRET" "$TEST_DIR/err" "$TEST_DIR/out"; then fail "a secret was logged"; fi

log "2. still failing: no second alert"
"$TW" fs --path "$TEST_DIR/data" --min-free 1P "${common[@]}" >/dev/null 2>&1 || true
[ "$(n_mail)" = 1 ] || fail "a second mail was sent while the check stayed failing"

log "3. cleared: one RESOLVED"
"$TW" fs --path "$TEST_DIR/data" --min-free 1K "${common[@]}" >/dev/null 2>&1 || fail "expected OK"
[ "$(n_mail)" = 2 ] || fail "expected a RESOLVED mail"
grep -l "Subject: \[trainwatch RESOLVED\]" "$MAILDIR"/*.eml >/dev/null || fail "no RESOLVED subject"
"$TW" fs --path "$TEST_DIR/data" --min-free 1K "${common[@]}" >/dev/null 2>&1
[ "$(n_mail)" = 2 ] || fail "RESOLVED was sent twice"

log "4. the webhook answers 500, then hangs, then closes the connection: spooled, nothing lost"
printf '500\n500\nhang\nclose\n' >"$PLAN"
before=$(n_req)
"$TW" fs --path "$TEST_DIR/data" --min-free 1P --state-dir "$state" --notify "$hook" --tries 2 --delivery-timeout 2s \
  >/dev/null 2>"$TEST_DIR/err4" || true
grep -q "kept in" "$TEST_DIR/err4" || fail "the failed delivery was not reported as kept: $(cat "$TEST_DIR/err4")"
[ "$(find "$state/spool" -name '*.json' | wc -l)" = 1 ] || fail "expected 1 spooled alert"
# flush sends only to sinks configured now: it takes the same alerting options.
"$TW" flush --state-dir "$state" --notify "$hook" --tries 2 --delivery-timeout 2s >/dev/null 2>&1 || true
[ "$(find "$state/spool" -name '*.json' | wc -l)" = 1 ] || fail "the alert left the spool though hang/close failed"
"$TW" flush --state-dir "$state" --notify "$hook" --delivery-timeout 2s >/dev/null 2>&1 || fail "flush did not deliver"
[ "$(find "$state/spool" -name '*.json' | wc -l)" = 0 ] || fail "the spool is not empty after a good delivery"
answers=$(cat "$REQDIR"/*.answer | tr '\n' ' ')
log "webhook answers so far: $answers"
[ "$(( $(n_req) - before ))" -ge 5 ] || fail "expected 5 attempts (500, 500, hang, close, 200)"

log "5. 429 with Retry-After: waited for, then delivered"
echo "429 2" >"$PLAN"
"$TW" fs --path "$TEST_DIR/data" --min-free 1K --state-dir "$state" --notify "$hook" >/dev/null 2>"$TEST_DIR/err5" || true
start=$SECONDS
[ "$(find "$state/spool" -name '*.json' | wc -l)" = 0 ] || fail "the RESOLVED after a 429 was not delivered"
grep -q "sent RESOLVED" "$TEST_DIR/err5" || fail "no RESOLVED sent after the 429: $(cat "$TEST_DIR/err5")"
: "$start"

log "6. a --notify-file readable by others is refused"
echo "$mail" >"$TEST_DIR/sinks"
chmod 644 "$TEST_DIR/sinks"
rc=0
out=$("$TW" fs --path "$TEST_DIR/data" --state-dir "$state" --notify-file "$TEST_DIR/sinks" 2>&1) || rc=$?
[ "$rc" = 3 ] || fail "exit $rc for a group-readable notify file"
grep -q "chmod 600" <<<"$out" || fail "no advice: $out"
chmod 600 "$TEST_DIR/sinks"
"$TW" fs --path "$TEST_DIR/data" --state-dir "$state" --notify-file "$TEST_DIR/sinks" >/dev/null 2>&1 || fail "mode 600 refused"

log "7. bad input: one line, exit 3, nothing sent"
before=$(n_mail)
for bad in "--notify=ftp://x" "--notify=smtp://h?to=a@b" "--repeat=soon"; do
  rc=0
  out=$("$TW" fs --path / --state-dir "$state" "$bad" 2>&1) || rc=$?
  { [ "$rc" = 3 ] && [ "$(wc -l <<<"$out")" = 1 ]; } || fail "$bad: exit $rc, output: $out"
done
[ "$(n_mail)" = "$before" ] || fail "bad input sent mail"
log "8. STARTTLS asked for and not offered: nothing sent in plaintext, the alert kept"
before=$(n_mail)
tls="smtp://127.0.0.1:$SMTP_PORT?from=trainwatch@example.org&to=ops@example.org&starttls=required"
"$TW" fs --path "$TEST_DIR/data" --min-free 1P --state-dir "$TEST_DIR/state-tls" --notify "$tls" --tries 1 \
  >/dev/null 2>"$TEST_DIR/err8" || true
[ "$(n_mail)" = "$before" ] || fail "a mail went out without the STARTTLS that was required"
[ "$(find "$TEST_DIR/state-tls/spool" -name '*.json' | wc -l)" = 1 ] || fail "the alert was not kept"

log "9. sendmail sink, a quota command, the textfile"
cat >"$TEST_DIR/sendmail" <<'SM'
#!/bin/sh
cat >"$(dirname "$0")/sendmail.out"
SM
chmod +x "$TEST_DIR/sendmail"
rc=0
TRAINCTL_SENDMAIL=$TEST_DIR/sendmail "$TW" fs --path "$TEST_DIR/data" --min-free 1M \
  --quota-command "printf '/scratch 900 0 1000 - 5 0 100 -\n'" --state-dir "$TEST_DIR/state-q" \
  --notify sendmail:ops@example.org --textfile "$TEST_DIR/trainwatch.prom" >"$TEST_DIR/out9" || rc=$?
[ "$rc" = 2 ] || fail "the quota (100K left) did not make it CRITICAL: $(cat "$TEST_DIR/out9")"
grep -q "100K free of 1000K (10.0%, quota)" "$TEST_DIR/out9" || fail "quota figures: $(cat "$TEST_DIR/out9")"
grep -q "^To: ops@example.org" "$TEST_DIR/sendmail.out" || fail "sendmail got no message"
grep -q "^trainwatch_status{check=\"fs\",target=\"$TEST_DIR/data\"} 2" "$TEST_DIR/trainwatch.prom" || fail "textfile"

log "10. five concurrent runs of a failing check: one alert"
before=$(n_mail)
pids=()
for _ in 1 2 3 4 5; do
  "$TW" fs --path "$TEST_DIR/data" --min-free 1P --state-dir "$TEST_DIR/state-c" --notify "$mail" >/dev/null 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || true; done
[ "$(( $(n_mail) - before ))" = 1 ] || fail "$(( $(n_mail) - before )) mails from 5 concurrent runs"

log "11. a secret on the command line is refused: one line, exit 3, nothing sent"
before=$(n_req)
for bad in "slack:$SLACK_URL" "webhook:$HOOK_URL" "smtps://u:pw@127.0.0.1:$SMTP_PORT?from=a@b.org&to=c@d.org"; do
  rc=0
  out=$("$TW" fs --path "$TEST_DIR/data" --min-free 1P --state-dir "$TEST_DIR/state-argv" --notify "$bad" 2>&1) || rc=$?
  { [ "$rc" = 3 ] && [ "$(wc -l <<<"$out")" = 1 ]; } || fail "secret on argv: exit $rc, output: $out"
  if grep -qE "SECRET|pw@" <<<"$out"; then fail "the refusal repeats the secret: $out"; fi
done
[ "$(n_req)" = "$before" ] || fail "a refused run still posted"

log "12. sendmail that exits without reading, or hangs: no SIGPIPE death, --delivery-timeout holds"
printf '#!/bin/sh\nexit 0\n' >"$TEST_DIR/sendmail-deaf"
printf '#!/bin/sh\nexec sleep 60\n' >"$TEST_DIR/sendmail-hung"
chmod +x "$TEST_DIR/sendmail-deaf" "$TEST_DIR/sendmail-hung"
rc=0
TRAINCTL_SENDMAIL=$TEST_DIR/sendmail-deaf "$TW" fs --path "$TEST_DIR/data" --min-free 1P --state-dir "$TEST_DIR/state-sm" \
  --notify sendmail:ops@example.org >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "with a sendmail that reads nothing trainwatch exited $rc (141 is SIGPIPE), expected 2"
rc=0
start=$SECONDS
TRAINCTL_SENDMAIL=$TEST_DIR/sendmail-hung "$TW" fs --path "$TEST_DIR/data" --min-free 1P --state-dir "$TEST_DIR/state-smh" \
  --notify sendmail:ops@example.org --tries 1 --delivery-timeout 2s >/dev/null 2>"$TEST_DIR/err12" || rc=$?
[ "$rc" = 2 ] || fail "a hung sendmail: exit $rc"
[ $((SECONDS - start)) -lt 15 ] || fail "a hung sendmail held trainwatch $((SECONDS - start)) s past --delivery-timeout 2s"
[ "$(find "$TEST_DIR/state-smh/spool" -name '*.json' | wc -l)" = 1 ] || fail "the alert for the hung sendmail was not kept"
pkill -f "$TEST_DIR/sendmail-hung" 2>/dev/null || true

log "13. a huge Retry-After is not a sleep until killed: refused at once, the alert kept"
echo "429 99999999999999999999999" >"$PLAN"
rc=0
timeout 60 "$TW" fs --path "$TEST_DIR/data" --min-free 1P --state-dir "$TEST_DIR/state-ra" --notify "$hook" \
  >/dev/null 2>"$TEST_DIR/err13" || rc=$?
[ "$rc" = 2 ] || fail "huge Retry-After: exit $rc (124 is the timeout: it slept)"
grep -q "longer than this run waits" "$TEST_DIR/err13" || fail "no word about the Retry-After: $(cat "$TEST_DIR/err13")"
[ "$(find "$TEST_DIR/state-ra/spool" -name '*.json' | wc -l)" = 1 ] || fail "the alert was not kept"
: >"$PLAN"
log "14. --config read strictly: a misspelt key, junk, an unreadable --notify-file refused; [fs] and comments read"
cfg=$TEST_DIR/tw.conf
for bad in 'notfy = ["x"]' $'\x01\xfe\xff junk' 'state-dir = "unclosed' '[nosuchcheck]'; do
  printf '%s\n' "$bad" >"$cfg"
  rc=0
  out=$("$TW" --config "$cfg" fs --path "$TEST_DIR/data" --state-dir "$state" 2>&1) || rc=$?
  { [ "$rc" = 3 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q "$cfg:1" <<<"$out"; } || fail "config '$bad': exit $rc: $out"
done
printf 'state-dir = "%s"  # comment\n[fs]\npath = "%s"\nmin-free = "1P"   # one petabyte: CRITICAL\n' \
  "$TEST_DIR/state-cfg" "$TEST_DIR/data" >"$cfg"
rc=0
"$TW" --config "$cfg" fs >"$TEST_DIR/out14" 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "[fs] from --config was not applied: exit $rc: $(cat "$TEST_DIR/out14")"
printf 'notify = ["webhook:%s"]\n' "$HOOK_URL" >"$cfg"
chmod 644 "$cfg"
rc=0
out=$("$TW" --config "$cfg" fs --path "$TEST_DIR/data" --state-dir "$state" 2>&1) || rc=$?
{ [ "$rc" = 3 ] && grep -q "chmod 600" <<<"$out"; } || fail "a readable --config with a webhook URL: exit $rc: $out"
if grep -q SECRET <<<"$out"; then fail "the refusal repeats the secret: $out"; fi
rc=0
out=$("$TW" fs --path "$TEST_DIR/data" --state-dir "$state" --notify-file "$TEST_DIR/no-such-sinks" 2>&1) || rc=$?
{ [ "$rc" = 3 ] && grep -q "cannot read it" <<<"$out"; } || fail "an unreadable --notify-file: exit $rc: $out"
log "PASS: mail, slack and webhook delivered; dedupe, RESOLVED, spool and flush, 429, STARTTLS, sendmail, quota, concurrency; secrets off argv, deaf and hung sendmail, huge Retry-After, strict config"
