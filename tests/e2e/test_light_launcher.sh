#!/usr/bin/env bash
# e2e-modes: run
# e2e-torch: the reference: light_launcher.py must look to trainctl as real torchrun does
# The light launcher (tests/e2e/light_launcher.py, what most e2e tests run instead of
# torchrun) against real torchrun, side by side: two 1-node jobs of 2 ranks under
# trainctl-run, one per launcher, the same options. For each:
#  - the process tree below the supervisor: one agent without RANK, which ignores the
#    notice signals and handles TERM, and below it 2 ranks with RANK, LOCAL_RANK,
#    WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT, which handle the notice;
#  - which processes get the notice: the save switch reaches both ranks once; a USR1 to
#    every process of the step (scancel --signal=USR1, as SLURM's --signal sends it)
#    leaves the agent running: both ranks save and exit at one step, COMPLETED;
#  - what the supervisor says: its lines, numbers and pids aside, are the same.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

export TRAINCTL_POLL_INTERVAL=1s
jobs_of=()
for kind in torchrun light; do
  mkdir -p "$TEST_DIR/$kind"
  torch=""
  [ "$kind" != torchrun ] || torch=1
  E2E_TORCH=$torch CKPT_DIR=$TEST_DIR/$kind/ckpt EVENTS_DIR=$TEST_DIR/$kind/events \
    supervised_job "$TEST_DIR/$kind/job.sh" --kill-switch="$TEST_DIR/$kind/KILL" --save-switch="$TEST_DIR/$kind/SAVE" \
    --poll-interval=1s
  jobs_of+=("$(submit -N1 --time=5 -o "$TEST_DIR/$kind/job.out" "$TEST_DIR/$kind/job.sh")")
done
log "jobs ${jobs_of[0]} (torchrun) and ${jobs_of[1]} (light launcher)"
started() { [ "$(cat "$TEST_DIR/$1"/events/rank*.jsonl 2>/dev/null | grep -c '"start"')" -ge 2 ]; }
wait_for 180 "torchrun's 2 ranks started" started torchrun
wait_for 60 "the light launcher's 2 ranks started" started light

# tree JOB: each process below the job's supervisor (step 0), as "depth role details",
# role agent or rank; pids and ports left out.
tree() {
  python3 - "$1" <<'PY'
import os, sys
job = sys.argv[1]
def environ(p):
    try:
        return dict(kv.split("=", 1) for kv in open("/proc/%d/environ" % p, "rb").read().decode(errors="replace").split("\0") if "=" in kv)
    except OSError:
        return {}
def cmdline(p):  # b"" for a process that is gone (other tests' come and go)
    try:
        return open("/proc/%d/cmdline" % p, "rb").read()
    except OSError:
        return b""
def children(p):
    out = []
    for t in os.listdir("/proc/%d/task" % p):
        try:
            out += [int(c) for c in open("/proc/%d/task/%s/children" % (p, t)).read().split()]
        except OSError:
            pass
    return out
def sigs(p):
    f = dict(l.split(":", 1) for l in open("/proc/%d/status" % p) if ":" in l)
    ign, cgt = int(f["SigIgn"], 16), int(f["SigCgt"], 16)
    bit = lambda n, m: bool(m >> (n - 1) & 1)
    return "USR1 %s, TERM %s" % ("ignored" if bit(10, ign) else "caught" if bit(10, cgt) else "default",
                                 "ignored" if bit(15, ign) else "caught" if bit(15, cgt) else "default")
sup = [p for p in map(int, filter(str.isdigit, os.listdir("/proc")))
       if b"trainctl-run" in cmdline(p).split(b"\0")[0]
       and environ(p).get("SLURM_JOB_ID") == job and environ(p).get("SLURM_STEP_ID") == "0"]
if len(sup) != 1:
    sys.exit("job %s: %d supervisors of step 0" % (job, len(sup)))
def walk(p, depth):
    for c in sorted(children(p)):
        if b"train_example.py" not in cmdline(c):
            continue  # the supervisor's own helpers
        env = environ(c)
        if "RANK" in env:
            print(depth, "rank", "RANK=%s LOCAL_RANK=%s WORLD_SIZE=%s LOCAL_WORLD_SIZE=%s MASTER_ADDR=%s MASTER_PORT=%s;"
                  % (env["RANK"], env.get("LOCAL_RANK"), env.get("WORLD_SIZE"), env.get("LOCAL_WORLD_SIZE"),
                     env.get("MASTER_ADDR"), "set" if env.get("MASTER_PORT") else "unset"), sigs(c))
        else:
            print(depth, "agent;", sigs(c))
        walk(c, depth + 1)
walk(sup[0], 1)
PY
}
t_torch=$(tree "${jobs_of[0]}") || fail "torchrun's tree: $t_torch"
t_light=$(tree "${jobs_of[1]}") || fail "the light launcher's tree: $t_light"
log "process tree below the supervisor (torchrun):"$'\n'"$t_torch"
[ "$t_torch" = "$t_light" ] || fail "the light launcher's process tree differs from torchrun's:"$'\n'"$t_light"
{ [ "$(grep -c ' rank ' <<<"$t_torch")" = 2 ] && [ "$(grep -c ' agent;' <<<"$t_torch")" = 1 ]; } ||
  fail "not one agent over 2 ranks: $t_torch"
log "same process tree: one agent, 2 ranks, the same environment and signal dispositions"

saves() { cat "$TEST_DIR/$1"/events/rank*.jsonl 2>/dev/null | grep '"event": "save"' | grep -c save-switch || true; }
two_saves() { [ "$(saves "$1")" -ge 2 ]; }
for kind in torchrun light; do touch "$TEST_DIR/$kind/SAVE"; done
wait_for 30 "torchrun's 2 ranks to save" two_saves torchrun
wait_for 30 "the light launcher's 2 ranks to save" two_saves light
sleep 2  # room for a wrong second save to show up
# SLURM's notice as --signal sends it: to every process of the step. A launcher it
# killed would fail the step, and the job.
for j in "${jobs_of[@]}"; do scancel --signal=USR1 "$j.0"; done
for j in "${jobs_of[@]}"; do wait_for 90 "job $j to end" job_ended "$j"; done
exits() {
  python3 - "$TEST_DIR/$1/events" <<'PY'
import glob, json, sys
ex = [json.loads(l) for f in glob.glob(sys.argv[1] + "/rank*.jsonl") for l in open(f) if '"exit"' in l]
print(len(ex), "exits at", len({e["step"] for e in ex}), "step(s), reason", ",".join(sorted({e["reason"] for e in ex})))
PY
}
for i in 0 1; do
  kind=$([ "$i" = 0 ] && echo torchrun || echo light)
  [ "$(job_state "${jobs_of[$i]}")" = COMPLETED ] || fail "$kind's job ended $(job_state "${jobs_of[$i]}")"
  [ "$(saves "$kind")" = 2 ] || fail "$kind: $(saves "$kind") saves for one touch of the save switch on 2 ranks"
done
[ "$(exits torchrun)" = "$(exits light)" ] || fail "torchrun: $(exits torchrun); the light launcher: $(exits light)"
case "$(exits light)" in "2 exits at 1 step(s), reason "*) ;; *) fail "light launcher: $(exits light)" ;; esac
log "both: one save per rank for the save switch; SLURM's USR1 to the whole step: $(exits light), COMPLETED"

# What the supervisor said, numbers aside.
said() { grep -a '^trainctl' "$TEST_DIR/$1/job.out" | sed -E 's/[0-9]+(\.[0-9]+)?/N/g' | sort -u; }
if ! diff <(said torchrun) <(said light) >"$TEST_DIR/said.diff"; then
  fail "the supervisor's lines differ (< torchrun, > light launcher):"$'\n'"$(cat "$TEST_DIR/said.diff")"
fi
log "the supervisor's lines, numbers aside, are the same:"$'\n'"$(said light)"
log "PASS: to trainctl the light launcher looks as torchrun does"
