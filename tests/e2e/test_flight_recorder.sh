#!/usr/bin/env bash
# e2e-modes: run
# e2e-core: run
# e2e-torch: torch's flight recorder of gloo's collectives (torch 2.x), read across ranks in the hang summary
# A hang names the collective (issue 66). Three jobs of 2 nodes x 2 ranks side by side,
# real torchrun, a gradient all_reduce every step, --hang-timeout=10s and end-step:
#   skip:       rank 2 stops in its own Python code before its all_reduce: the summary
#               says ranks 0,1,3 wait in all_reduce #N and rank 2 never entered #N, with
#               its stack;
#   other:      rank 2 calls all_gather where the others all_reduce: named as such;
#   own code:   every rank stops in its own code: no collective is blamed, in the hang
#               summary and in `trainctl stacks` (this job's action is alert).
# Each rank's torch dump lies in stacks-<job>/ as flight_recorder_rank<R>, and torch's
# own analyzer (fr_trace) reads them. The supervisor switched the recorder on: the loop
# sets nothing. Gloo ends a size mismatch itself (its "Received data size doesn't match"
# aborts the rank: a crash, not a hang), so that case is a unit test's
# (CollectiveVerdict.ARankInAnotherCollectiveOrWithOtherSizesIsTheOddOneOut). Where torch
# has no flight recorder for gloo (Debian 12's 1.13, trixie's 2.6) it skips: there
# test_hang_stacks checks that the summary says so.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"

# Read from torch's files, not imported: an import costs 1-2 CPU-s where the test skips.
# The binding torch's gloo recorder dumps through lies in libtorch_python (torch/lib in a
# wheel, the multiarch directory in Debian's package).
has_gloo_recorder() {
  /usr/bin/python3 -c 'import glob, importlib.util, os, sys
spec = importlib.util.find_spec("torch")
libs = spec and glob.glob(os.path.join(os.path.dirname(spec.origin), "lib", "libtorch_python.so*")) + \
    glob.glob("/usr/lib/*-linux-gnu/libtorch_python.so.*")
sys.exit(0 if libs and any(b"_dump_fr_trace" in open(f, "rb").read() for f in libs) else 1)' 2>/dev/null
}
if ! has_gloo_recorder; then
  log "SKIP: this torch's flight recorder does not record gloo (recent torch does: sid's root has it)"
  exit 77
fi

# Every rank of the third job hangs: each one's own --hang-rank, through a wrapper.
cat >"$TEST_DIR/every_rank.py" <<PY
import os, runpy, sys
sys.argv += ["--hang-rank", os.environ["RANK"]]
sys.argv[0] = "$TRAIN"
runpy.run_path("$TRAIN", run_name="__main__")
PY
declare -A jobs
for case in skip other own; do
  mkdir -p "$TEST_DIR/events-$case"
  args="--allreduce --hang-at 40"
  script=$TRAIN
  case $case in
    skip) args+=" --hang-rank 2 --hang-in python" ;;
    other) args+=" --hang-rank 2 --hang-in all_gather" ;;
    own) script=$TEST_DIR/every_rank.py ;;
  esac
  # The own-code job stays hung (alert only) for `trainctl stacks` below.
  action="end-step"
  [ "$case" != own ] || action=alert
  TRAIN_SCRIPT=$script TRAIN_ARGS=$args EVENTS_DIR=$TEST_DIR/events-$case CKPT_DIR=$TEST_DIR/ckpt-$case \
    supervised_job "$TEST_DIR/$case.sh" --hang-timeout=10s --hang-action=$action
  jobs[$case]=$(submit -N2 --ntasks-per-node=1 --time=5 "${JOB_OPTS[@]}" -o "$TEST_DIR/$case.out" "$TEST_DIR/$case.sh")
done
log "submitted skip ${jobs[skip]}, other ${jobs[other]}, own code ${jobs[own]}"
for case in skip other; do
  wait_for 240 "the $case job to end (end-step)" job_ended "${jobs[$case]}"
done
wait_for 120 "the own-code job's summary" grep -q 'hang: the whole job' "$TEST_DIR/own.out"
# On demand, from outside, as a user would look at the hung job: the same reading.
"$BUILD/bin/trainctl" stacks "${jobs[own]}" >"$TEST_DIR/stacks.out" || fail "trainctl stacks failed: $(cat "$TEST_DIR/stacks.out")"
log "trainctl stacks: $(cat "$TEST_DIR/stacks.out")"
grep -q "; flight recorder: no rank waits in a collective: the newest, all_reduce #[0-9]*, completed on every rank" \
  "$TEST_DIR/stacks.out" || fail "trainctl stacks does not give the flight recorder's reading"
scancel "${jobs[own]}"
wait_for 60 "the own-code job to end (scancel)" job_ended "${jobs[own]}"

# summary_of CASE: the first node's line for the whole job.
summary_of() {
  grep -o 'hang: the whole job (4 of 4 ranks dumped): .*' "$TEST_DIR/$1.out" | head -1
}
for case in skip other own; do
  s=$(summary_of "$case") || fail "$case: no whole-job summary: $(grep hang "$TEST_DIR/$case.out")"
  log "$case: $s"
  [ "$case" = own ] || grep -q "hang: ending the step" "$TEST_DIR/$case.out" || fail "$case: end-step did not run"
done
skip=$(summary_of skip) other=$(summary_of other) own=$(summary_of own)
grep -Eq 'flight recorder: ranks 0,1,3 wait in all_reduce #([0-9]+) \(float32 x 4,096, issued at train_step \(train_example.py:[0-9]+\)\); rank 2.s last collective is #[0-9]+: it never entered #[0-9]+ \(its stack: hang \(train_example.py:[0-9]+\)\)' <<<"$skip" ||
  fail "skip: the summary does not name rank 2 as the one that never entered the all_reduce"
grep -Eq 'flight recorder: ranks 0,1,3 wait in all_reduce #[0-9]+ \(float32 x 4,096, issued at train_step \(train_example.py:[0-9]+\)\); rank 2 entered all_gather #[0-9]+ while the others entered all_reduce' <<<"$other" ||
  fail "other: the summary does not name rank 2's all_gather"
grep -Eq 'flight recorder: no rank waits in a collective: the newest, all_reduce #[0-9]+, completed on every rank' <<<"$own" ||
  fail "own code: a collective was blamed"

# trainctl report's hang_summary is test_hang_stacks' (sid's cluster keeps no accounting).

log "torch's dumps beside the stacks, and torch's analyzer on them"
dir=$TRAINCTL_LOG_DIR/trainctl-$(id -un)/stacks-${jobs[skip]}
for r in 0 1 2 3; do
  [ -s "$dir/flight_recorder_rank$r" ] || fail "no flight recorder dump of rank $r in $dir: $(ls "$dir")"
  grep -q '^=== collective: pg=0 seq=' "$dir/rank$r.txt" || fail "rank $r's stack file has no digest"
done
# The command docs/misbehaving-runs.md gives, on the skip job's dumps: it names the same
# collective and the same rank as the summary.
/usr/bin/python3 -m torch.distributed.flight_recorder.fr_trace "$dir" --prefix flight_recorder_rank \
  >"$TEST_DIR/fr_trace.out" 2>&1 || fail "torch's analyzer failed: $(tail -5 "$TEST_DIR/fr_trace.out")"
seq=$(grep -Eo 'wait in all_reduce #[0-9]+' <<<"$skip" | grep -Eo '[0-9]+$')
log "fr_trace: $(grep -E 'Not all ranks joining|missing ranks' "$TEST_DIR/fr_trace.out" | tr '\n' ' ')"
if ! grep -q "Not all ranks joining collective, sequence number: $seq\$" "$TEST_DIR/fr_trace.out" ||
  ! grep -q '^missing ranks: {2}$' "$TEST_DIR/fr_trace.out"; then
  fail "torch's analyzer does not name rank 2 missing from #$seq: $(head -20 "$TEST_DIR/fr_trace.out")"
fi
other_dir=$TRAINCTL_LOG_DIR/trainctl-$(id -un)/stacks-${jobs[other]}
/usr/bin/python3 -m torch.distributed.flight_recorder.fr_trace "$other_dir" --prefix flight_recorder_rank \
  >"$TEST_DIR/fr_trace_other.out" 2>&1 || fail "torch's analyzer failed: $(tail -5 "$TEST_DIR/fr_trace_other.out")"
log "fr_trace (other): $(grep -v tabulate "$TEST_DIR/fr_trace_other.out" | head -6 | tr '\n' ' ')"

# How soon: from the stall (the hung rank's event) to the first node's summary line.
for case in skip other; do
  python3 - "$TEST_DIR/events-$case" "$TRAINCTL_LOG_DIR/trainctl-$(id -un)/stacks-${jobs[$case]}/summary.txt" "$case" <<'PY'
import glob, json, os, sys
hung = max(json.loads(l)["time"] for f in glob.glob(sys.argv[1] + "/rank*.jsonl") for l in open(f) if '"hang"' in l)
print("figure: %s: the job-wide summary was on disk %.1f s after the stall (hang timeout 10 s)"
      % (sys.argv[3], os.stat(sys.argv[2]).st_mtime - hung))
PY
done
log "PASS: the hang summaries name the rank and the collective; torch's dumps collected"
