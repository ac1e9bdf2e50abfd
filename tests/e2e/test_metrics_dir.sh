#!/usr/bin/env bash
# e2e-modes: plugin
# e2e-locks: team-users
# --metrics-dir with Debian's node_exporter (its textfile collector, on loopback) over a
# directory the way an admin makes it: root's, group-writable with the sticky bit. alice's
# 2-node job (a gradient all_reduce every step, rank 1 computing 3x slower, rank 0
# stalling 6 s), the option given to sbatch (the plugin passes it to every task): one
# file per node that promtool finds clean, served by node_exporter with the labels
# slurm_job, user, run_id and node and each rank's step, which goes on; the straggler
# and the hang each found once; bob's save is seen as the last committed step.
# Prometheus scrapes node_exporter: the job's goodput, node-seconds by cause and hang
# findings are `trainctl report --json`'s, and every panel of the Grafana dashboard
# (grafana/trainctl.json) over these metrics returns data. bob can neither replace nor
# remove alice's files; his own job's file lies beside them. A directory anyone can
# write is refused in one line, the job runs on. When the job ends its files are gone.
# shellcheck source=tests/e2e/lib.sh
source "$(dirname "$0")/lib.sh"
make_team_users
as() {  # as USER COMMAND...: as that user, with the cluster's environment
  local who=$1
  shift
  runuser -u "$who" -- env SLURM_CONF="$SLURM_CONF" PYTHONPATH="$PYTHONPATH" PATH="$PATH" "$@"
}
on_exit() {
  local rc=$? p
  for p in $(pgrep -u alice,bob 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
  set +e
  (exit "$rc")
  cleanup
}
trap on_exit EXIT
chown alice:tcteam "$TEST_DIR"
chmod 2770 "$TEST_DIR"
metrics=$TEST_DIR/metrics  # what an admin makes: root's, the team may add files, sticky
mkdir -m 1770 "$metrics"
chgrp tcteam "$metrics"
chmod 1770 "$metrics"
open=$TEST_DIR/open  # anyone may write here: refused
mkdir -m 1777 "$open"
chmod 1777 "$open"
as alice mkdir -p "$TEST_DIR/events" "$TEST_DIR/ckpt"
chmod 2770 "$TEST_DIR/events"
chown alice "$TRAINCTL_LOG_DIR"
start_node_exporter "$metrics"
start_prometheus "${NE_URL#http://}"

log "alice's 2-node job with --metrics-dir: rank 1 computes 3x slower, rank 0 stalls 6 s at step 15"
TRAIN_ARGS="--slow-rank 1 --slow-factor 3 --hang-rank 0 --hang-at 15 --hang-for 6" supervised_job "$TEST_DIR/job.sh" \
  --metrics-dir="$metrics" --metrics-interval=1s --save-switch="$TEST_DIR/SAVE" --graceful-exit=1 --hang-timeout=2s
chmod 755 "$TEST_DIR/job.sh"
job=$(as alice sbatch --parsable -N2 --ntasks-per-node=1 --time=3 "${JOB_OPTS[@]}" -o "$TEST_DIR/job.out" \
  "$TEST_DIR/job.sh") || fail "alice's sbatch was refused"
job=${job%%;*}
SUBMITTED+=("$job")
scraped() { curl -sf --max-time 5 "$NE_URL/metrics" | grep '^trainctl_' || true; }
# Each node's file, once both its ranks called check() (a file is written at the first).
both_nodes() { [ "$(scraped | grep -c '^trainctl_ranks{.*} 2$')" = 2 ]; }
wait_for 120 "node_exporter to serve both nodes' files, each with its 2 ranks" both_nodes
files=$(find "$metrics" -name '*.prom' | sort)
[ "$(wc -l <<<"$files")" = 2 ] || fail "expected 2 files, one per node: $files"
promtool_clean() {  # each file as it is now: the node state's figures, and the first node's goodput
  local f
  for f in $files; do
    [ "$(stat -c '%U %a' "$f")" = "alice 644" ] || fail "$f: $(stat -c '%U %a' "$f")"
    promtool check metrics <"$f" >"$TEST_DIR/promtool.out" 2>&1 || fail "promtool on $f: $(cat "$TEST_DIR/promtool.out")"
  done
}
promtool_clean
run_id=$(grep -o 'run_id="[^"]*"' <<<"$(scraped)" | head -1)
[ -n "$run_id" ] || fail "no run_id label: $(scraped | head -3)"
for node in n1 n2; do
  # node_exporter sorts the labels by name
  scraped | grep -q "^trainctl_ranks{node=\"$node\",$run_id,slurm_job=\"$job\",slurm_step=\"0\",user=\"alice\"} 2$" ||
    fail "no 2 ranks of job $job on $node: $(scraped | grep '^trainctl_ranks')"
done
steps() { scraped | grep '^trainctl_rank_step{' | awk '{s += $2} END {print s + 0}'; }
first=$(steps)
grown() { [ "$(steps)" -gt "$first" ]; }
wait_for 30 "the ranks' steps to go on in the scraped figures" grown

log "the straggler and the hang, each found once"
straggler_found() { scraped | grep -Eq '^trainctl_rank_straggler_findings_total\{.*rank="1".*\} [1-9]'; }
wait_for 60 "rank 1's straggler finding" straggler_found
hang_found() { scraped | grep -Eq '^trainctl_notices_total\{kind="hang",.*\} 1$'; }
wait_for 60 "the hang finding in the first node's file" hang_found

log "bob's save: the last committed step"
as bob touch "$TEST_DIR/SAVE"
committed() { [ "$(scraped | grep -c '^trainctl_last_committed_step{')" = 2 ]; }
wait_for 60 "each node's last committed step" committed

log "the job's goodput in Prometheus is trainctl report's"
# The first node's file has the report's figures of the running job: Prometheus' latest
# scrape of them (one query, one scrape) against `trainctl report --json` right after.
# No save comes between them (the loop saves on the switch only), so each bucket is the
# same and only the time since the last save grew, on the allocated and unsaved alike.
# node_exporter showed both nodes' save above; Prometheus' own latest scrape may be older
# than that, so wait for the save on both nodes in Prometheus itself.
scraped_save() {
  curl -sf --max-time 5 "$PROM_URL/api/v1/query" --data-urlencode \
    "query=count(trainctl_last_committed_step{slurm_job=\"$job\"}) and on() trainctl_productive_node_seconds_total{slurm_job=\"$job\"} > 0" |
    grep -q '"value":\[[^]]*,"2"\]'
}
wait_for 30 "Prometheus to scrape the save on both nodes and the job's goodput" scraped_save
curl -sf --max-time 5 "$PROM_URL/api/v1/query" --data-urlencode \
  "query={__name__=~\"trainctl_.*\",slurm_job=\"$job\"}" >"$TEST_DIR/scraped.json" || fail "Prometheus did not answer"
as alice "$BUILD/bin/trainctl" report --json --no-svg "$job" >"$TEST_DIR/report.json" || fail "report --json failed"
python3 - "$TEST_DIR/scraped.json" "$TEST_DIR/report.json" <<'PY' || fail "the scraped figures are not the report's (above)"
import json, sys
scraped = json.load(open(sys.argv[1]))["data"]["result"]
report = json.load(open(sys.argv[2]))
def live(name, **labels):
    values = [float(s["value"][1]) for s in scraped if s["metric"]["__name__"] == name
              and all(s["metric"].get(k) == v for k, v in labels.items())]
    assert len(values) == 1, (name, labels, values)
    return values[0]
nodes = report["tasks"][0]["nodes"]
for cause in ("startup", "restore", "saves", "lost", "hung"):
    got, want = live("trainctl_badput_node_seconds_total", cause=cause), report[cause + "_node_s"]
    assert abs(got - want) < 0.01, (cause, got, want)
productive = live("trainctl_productive_node_seconds_total")
assert productive > 0 and abs(productive - report["productive_node_s"]) < 0.01, (productive, report["productive_node_s"])
# Later by the same time on both: the report's now minus the file's.
later = report["allocated_node_s"] - live("trainctl_allocated_node_seconds_total")
assert 0 <= later < 30 * nodes, later
assert abs(later - (report["unsaved_node_s"] - live("trainctl_unsaved_node_seconds"))) < 0.01, later
then = report["productive_node_s"] / (report["allocated_node_s"] - later)
goodput = live("trainctl_goodput_ratio")
assert abs(goodput - then) < 0.001, ("goodput", goodput, then)
hangs = [n for n in report["tasks"][0]["notices"] if n["kind"] == "hang"]
assert len(hangs) == 1 and live("trainctl_notices_total", kind="hang") == 1, hangs
step = report["tasks"][0]["saves"][-1]["step"]
committed = [float(s["value"][1]) for s in scraped if s["metric"]["__name__"] == "trainctl_last_committed_step"]
assert committed == [step, step], (committed, step)
print("goodput %.4f scraped, %.4f the report's %.1f s later; committed step %d on both nodes" % (goodput, then, later / nodes, step))
PY

promtool_clean  # with the save, the hang and the straggler in them
with_goodput=$(xargs grep -l '^trainctl_goodput_ratio{' <<<"$files" || true)
[ "$(wc -w <<<"$with_goodput")" = 1 ] || fail "the goodput is in $(wc -w <<<"$with_goodput") files, not the first node's only"

log "the dashboard's panels over these metrics, in Prometheus"
in_prometheus() {
  curl -sf --max-time 5 "$PROM_URL/api/v1/query?query=count(trainctl_last_committed_step)" | grep -q '"value":\[[^]]*,"2"\]'
}
wait_for 30 "Prometheus to scrape both nodes' committed step" in_prometheus
python3 "$SRC/tests/e2e/dashboard_queries.py" "$PROM_URL" live || fail "a dashboard panel is wrong (above)"

log "bob can neither replace nor remove alice's files"
victim=$(head -1 <<<"$files")
as bob bash -c "echo 'trainctl_ranks 99' >$metrics/bob.prom.tmp" || fail "bob cannot write in the team's directory"
if as bob mv -f "$metrics/bob.prom.tmp" "$victim" 2>/dev/null; then fail "bob replaced $victim"; fi
if as bob rm -f "$victim" 2>/dev/null && [ ! -e "$victim" ]; then fail "bob removed $victim"; fi
rm -f "$metrics/bob.prom.tmp"

log "bob's own job writes its own file beside alice's"
as bob mkdir "$TEST_DIR/bob"
bobs=$(as bob sbatch --parsable -N1 --time=2 --metrics-dir="$metrics" --metrics-interval=1s -o "$TEST_DIR/bob/job.out" \
  --wrap "srun python3 $SRC/slurm_templates/train_example.py --ckpt-dir $TEST_DIR/bob/ckpt") || fail "bob's sbatch was refused"
bobs=${bobs%%;*}
SUBMITTED+=("$bobs")
bobs_file() { scraped | grep -Eq "^trainctl_ranks\{node=\"n[0-9]\",run_id=\"[^\"]+\",slurm_job=\"$bobs\",slurm_step=\"0\",user=\"bob\"\} 1$"; }
wait_for 60 "node_exporter to serve bob's job's file" bobs_file
[ "$(find "$metrics" -name "trainctl_${bobs}_*.prom" -user bob | wc -l)" = 1 ] || fail "bob's file: $(ls -l "$metrics")"
[ "$(find "$metrics" -name "trainctl_${job}_*.prom" -user alice | wc -l)" = 2 ] || fail "alice's files: $(ls -l "$metrics")"
as bob scancel "$bobs"
wait_for 60 "bob's job to end" job_ended "$bobs"

log "a directory anyone can write: refused in one line, the step runs"
out=$(as alice srun --jobid="$job" --overlap -N1 -n1 --metrics-dir="$open" true 2>&1) || fail "the step failed: $out"
grep -q "metrics-dir $open can be written by every user: no metrics from this task" <<<"$out" ||
  fail "no refusal: $out"
[ -z "$(ls "$open")" ] || fail "a refused directory got a file: $(ls "$open")"

log "the job ends: its files go"
as alice scancel "$job"
wait_for 60 "job $job to end" job_ended "$job"
no_files() { [ -z "$(find "$metrics" -name '*.prom')" ]; }
wait_for 30 "the job's files to go" no_files
[ -z "$(scraped)" ] || fail "node_exporter still serves trainctl metrics: $(scraped | head -3)"
log "PASS: node_exporter served both nodes' figures (promtool clean, labelled, growing, the commit seen), the goodput the report's, bob locked out of alice's files and his own beside them, an open directory refused, the files gone with the job"
