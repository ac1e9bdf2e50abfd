#!/usr/bin/env bash
# e2e-modes: run plugin
# e2e-core: plugin
# e2e-locks: team-users
# trainctl status on a running 2-node torchrun job of an unprivileged user (real DDP:
# a gradient all_reduce in every step, rank 2 computing 3x slower): four rows with
# their nodes and steps, the slow rank's factor, the deadline countdown (EndTime minus
# the graceful exit); --json parsed; --watch redraws from one job step and leaves none
# behind; with no JOB, one line per supervised job of the user's and her plain job named
# apart; another user gets one line. The ranks pay nothing: no save, no exit, no
# signal while they are looked at.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

run_as_user alice
TRAIN_ARGS="--slow-rank 2 --slow-factor 3" supervised_job "$TEST_DIR/job.sh" --kill-switch="$TEST_DIR/KILL" \
  --save-switch="$TEST_DIR/SAVE" --graceful-exit=2
chown alice "$TEST_DIR/job.sh"
job=$(submit_as_user -N2 --ntasks-per-node=1 --time=10 "${JOB_OPTS[@]}" -o "$TEST_DIR/job.out" "$TEST_DIR/job.sh")
log "submitted job $job as alice (DDP, rank 2 computes 3x slower, graceful exit 2 min)"
wait_for 120 "4 ranks started" events_at_least start 4
wait_for 90 "the straggler report" test -s "$TRAINCTL_LOG_DIR/slow_nodes"

t0=$(date +%s%N)
out=$(as_user "$BUILD/bin/trainctl" status "$job" 2>"$TEST_DIR/status.err") ||
  fail "trainctl status failed: $(cat "$TEST_DIR/status.err")"
ms=$((($(date +%s%N) - t0) / 1000000))
printf '%s\n' "$out"
log "figure: trainctl status on a 2-node job took $ms ms"
rows=$(grep -cE '^n[0-9]+ +[0-3] +[0-9]+ +[0-9]+ ' <<<"$out" || true)
[ "$rows" -eq 4 ] || fail "expected 4 rank rows, got $rows"
# The job's two nodes are whichever SLURM gave it (n1 and n2 on an idle cluster, not
# always beside other tests): ranks 0 and 1 on its first, 2 and 3 on its second.
read -r first second < <(scontrol show hostnames "$(job_field "$job" NodeList)" | paste -sd' ')
[ -n "$second" ] || fail "the job's nodes: $(job_field "$job" NodeList)"
for r in 0 1; do grep -qE "^$first +$r " <<<"$out" || fail "rank $r is not on $first"; done
for r in 2 3; do grep -qE "^$second +$r " <<<"$out" || fail "rank $r is not on $second"; done
grep -qE "^$second +2 .* [0-9.]+\* " <<<"$out" || fail "rank 2's factor is not marked as a straggler's"
grep -q "^findings    rank 2 on $second is a straggler" <<<"$out" || fail "no straggler finding for rank 2"
grep -qE '^deadline    in [0-9]+m[0-9]{2}s \(EndTime minus the graceful exit, 2m00s\)' <<<"$out" ||
  fail "no deadline countdown with the 2 min graceful exit"
grep -qF "kill-switch $TEST_DIR/KILL: not there" <<<"$out" || fail "the kill switch is not shown"

# --json, for dashboards: parsed, and the figures checked.
as_user "$BUILD/bin/trainctl" status --json "$job" >"$TEST_DIR/status.json" || fail "status --json failed"
python3 - "$TEST_DIR/status.json" "$job" "$first" "$second" <<'PY' || fail "the JSON is not what the table said"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["schema"] == 1, s.get("schema")
assert s["job"]["id"] == sys.argv[2], s["job"]
ranks = s["ranks"]
assert [r["rank"] for r in ranks] == [0, 1, 2, 3], ranks
assert [r["node"] for r in ranks] == [sys.argv[3]] * 2 + [sys.argv[4]] * 2, ranks
assert all(r["step"] is not None and r["step"] > 0 for r in ranks), ranks
slow = ranks[2]
assert slow["straggler"] and slow["factor"] >= 2.0, slow
assert all(not r["straggler"] and r["factor"] < 1.5 for r in ranks if r["rank"] != 2), ranks
d = s["deadline"]
assert d["graceful_exit_s"] == 120, d
assert 300 < d["in_s"] < 480, d
assert s["notices"] == [], s["notices"]
print("json: factor of rank 2 x%.2f, deadline in %.0f s" % (slow["factor"], d["in_s"]))
PY

# No JOB: one line per running job of alice's that trainctl supervises; her plain job
# (no trainctl in it) is named apart.
plain=$(submit_as_user -N1 --time=5 -o /dev/null --wrap "sleep 300")
wait_for 60 "alice's plain job to run" bash -c "[ \"\$(squeue -h -j $plain -o %T)\" = RUNNING ]"
list=$(as_user "$BUILD/bin/trainctl" status 2>"$TEST_DIR/list.err") || fail "trainctl status (no JOB) failed: $(cat "$TEST_DIR/list.err")"
printf '%s\n' "$list"
head -1 <<<"$list" | grep -qE '^JOB +NAME +NODES +RANKS +DEADLINE +FINDINGS$' || fail "no heading: $list"
grep -qE "^$job +[^ ]+ +[^ ]+ +4 +in [0-9]+m[0-9]{2}s +rank 2 on $second is a straggler" <<<"$list" ||
  fail "no row for job $job with 4 ranks, its deadline and the straggler"
grep -qx "1 other running job of yours without trainctl (no node state on its nodes): $plain" <<<"$list" ||
  fail "the plain job $plain is not named apart"
as_user "$BUILD/bin/trainctl" status --json >"$TEST_DIR/list.json" || fail "trainctl status --json (no JOB) failed"
python3 - "$TEST_DIR/list.json" "$job" "$plain" <<'PY' || fail "the list's JSON is not what the table said"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["schema"] == 1, s
assert [j["id"] for j in s["jobs"]] == [sys.argv[2]], s["jobs"]
j = s["jobs"][0]
assert j["ranks"] == 4 and 300 < j["deadline_in_s"] < 480 and j["findings"][0].startswith("rank 2 on"), j
assert s["unsupervised"] == [sys.argv[3]], s["unsupervised"]
PY
scancel "$plain"
out_m=$(runuser -u mallory -- env SLURM_CONF="$SLURM_CONF" "$BUILD/bin/trainctl" status 2>&1) || fail "mallory's trainctl status failed: $out_m"
[ "$out_m" = "no running jobs of yours" ] || fail "mallory's list: $out_m"
log "status with no JOB: alice's supervised job in one line, her plain job named apart, mallory's list empty"

# The view is live: the steps move between two looks.
step_a=$(python3 -c 'import json,sys; print(min(r["step"] for r in json.load(open(sys.argv[1]))["ranks"]))' "$TEST_DIR/status.json")
wait_for 60 "every rank past step $step_a in a later look" ranks_past "$job" 4 "$step_a"

# --watch: one helper step for the whole watch, redrawn every interval; Ctrl-C ends it
# (exit 0) and its step with it.
steps_before=$(squeue -h -s -j "$job" | wc -l)
watch_t0=$SECONDS
as_user "$BUILD/bin/trainctl" status --watch --interval 1s "$job" >"$TEST_DIR/watch.out" 2>&1 &
watch_pid=$!
redraws_at_least() { [ "$(grep -c '^NODE ' "$TEST_DIR/watch.out" || true)" -ge "$1" ]; }
job_steps_are() { [ "$(squeue -h -s -j "$job" | wc -l)" -eq "$1" ]; }
wait_for 30 "three redraws" redraws_at_least 3
steps_during=$(squeue -h -s -j "$job" | wc -l)
[ "$steps_during" -eq $((steps_before + 1)) ] || fail "--watch runs $((steps_during - steps_before)) job steps, not 1"
# Ctrl-C reaches trainctl (as_user's runuser passes it on; the helper's srun has its own group).
kill -INT "$(pgrep -u alice -x trainctl)"
watch_s=$((SECONDS - watch_t0))
watch_rc=0
wait "$watch_pid" || watch_rc=$?
[ "$watch_rc" -eq 0 ] || fail "--watch ended with $watch_rc after Ctrl-C: $(tail -3 "$TEST_DIR/watch.out")"
wait_for 30 "the watch's step to end" job_steps_are "$steps_before"
redraws=$(grep -c '^NODE ' "$TEST_DIR/watch.out")
# Once per interval (1 s), not once per node (2 nodes: twice a second).
[ "$redraws" -le $((watch_s + 1)) ] || fail "--watch redrew $redraws times in about $watch_s s: once per node, not per interval"
log "--watch redrew $redraws times in about $watch_s s from one step, which ended with it"
# A watch killed with -9 (a closed terminal's kill, the OOM killer) takes its srun, and
# with it the helper step, along (was: srun, the step and a probe per node ran on until
# the job ended).
as_user "$BUILD/bin/trainctl" status --watch --interval 1s "$job" >"$TEST_DIR/watch9.out" 2>&1 &
watch_pid=$!
wait_for 30 "the second watch's step" job_steps_are $((steps_before + 1))
wait_for 30 "a redraw" grep -q '^NODE ' "$TEST_DIR/watch9.out"
kill -9 "$(pgrep -u alice -x trainctl)"
wait "$watch_pid" || true  # killed: its status is -9's
wait_for 30 "the killed watch's step to end" job_steps_are "$steps_before"
# squeue drops the step before slurmstepd has reaped its tasks: the helpers must end
# within 30 s of it.
no_helpers() { ! pgrep -u alice -f -- '--status-here' >/dev/null; }
helpers_end=$((SECONDS + 30))
until no_helpers; do
  if [ "$SECONDS" -ge "$helpers_end" ]; then
    left=$(pgrep -u alice -f -- '--status-here' || true)
    fail "the killed watch left helpers running 30 s after its step ended: $(ps -o pid,args -p "${left//$'\n'/,}")"
  fi
  sleep 0.5
done
log "--watch killed with -9: its step and helpers ended with it"

# Another user: one line, no view.
err=$(runuser -u mallory -- env SLURM_CONF="$SLURM_CONF" "$BUILD/bin/trainctl" status "$job" 2>&1) && fail "mallory saw alice's job"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "mallory got more than one line: $err"
grep -q "the job is alice's; only its own user can look inside it" <<<"$err" || fail "mallory's line: $err"
# Bad input: one line, exit 2.
err=$(as_user "$BUILD/bin/trainctl" status --watch --interval 0.1s "$job" 2>&1) && fail "--interval 0.1s was accepted"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "--interval 0.1s: more than one line: $err"

# Looking cost the ranks nothing: no save, no notice, no exit until the kill switch.
[ "$(events_count save)" -eq 0 ] || fail "the ranks saved $(events_count save) times while being looked at"
[ "$(events_count exit)" -eq 0 ] || fail "a rank exited while being looked at"
if grep -qiE "signal|notice" "$TEST_DIR/job.out"; then fail "the job saw a signal: $(grep -iE 'signal|notice' "$TEST_DIR/job.out" | head -3)"; fi
as_user touch "$TEST_DIR/KILL"
wait_for 60 "the job to end" job_ended "$job"
[ "$(job_state "$job")" = COMPLETED ] || fail "the job ended $(job_state "$job")"
[ "$(events_count exit)" -eq 4 ] || fail "$(events_count exit) of 4 ranks exited at the kill switch"
err=$(as_user "$BUILD/bin/trainctl" status "$job" 2>&1) && fail "status of an ended job succeeded"
grep -q "the job is COMPLETED, not RUNNING" <<<"$err" || fail "status of an ended job: $err"
log "PASS: status showed 4 ranks, the straggler and the deadline, as a table, JSON and --watch; mallory got one line"
