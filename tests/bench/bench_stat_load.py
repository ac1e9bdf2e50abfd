"""Metadata load on the shared filesystem: stat calls per node per minute.

Starts R rank processes on one node (same job step, so one node state), each polling
should_exit() every step, and counts the stat calls the node's watcher made. Compares
with the usual per-rank os.path.exists at every step.

    PYTHONPATH=build/lib/python3/dist-packages python3 tests/bench/bench_stat_load.py
"""

import multiprocessing as mp
import os
import sys
import tempfile
import time

import trainctl

SECONDS = float(os.environ.get("BENCH_SECONDS", "6"))
INTERVAL = "1s"          # shortened so a few seconds show the rate; the default is 10s
STEPS_PER_SECOND = 10    # a fast training loop


def rank(state, kill, save, ready, go):
    ctl = trainctl.Controller(kill_switch=kill, save_switch=save, state_path=state,
                              signals="none", poll_interval=INTERVAL)
    ready.release()
    go.wait()
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        ctl.should_exit()
        time.sleep(1.0 / STEPS_PER_SECOND)
    ctl.close()


def measure(ranks):
    d = tempfile.mkdtemp(prefix="trainctl-bench-")
    state, kill, save = (os.path.join(d, n) for n in ("state", "KILL", "SAVE"))
    ready, go = mp.Semaphore(0), mp.Event()
    procs = [mp.Process(target=rank, args=(state, kill, save, ready, go)) for _ in range(ranks)]
    for p in procs:
        p.start()
    for _ in procs:
        ready.acquire()
    probe = trainctl.Controller(state_path=state, signals="none")
    before = probe.stat_calls
    go.set()
    time.sleep(SECONDS)
    calls = probe.stat_calls - before
    for p in procs:
        p.join()
    probe.close()
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    os.rmdir(d)
    return calls / SECONDS * 60


def main():
    print("stat load, 2 switches, poll interval %s, %d steps/s, %.0fs per run" % (INTERVAL, STEPS_PER_SECOND, SECONDS))
    for ranks in (1, 8):
        per_min = measure(ranks)
        naive = ranks * STEPS_PER_SECOND * 60 * 2
        print("ranks=%d: trainctl %6.0f stats/node/min (at the default 10s: %.0f); "
              "per-rank exists() per step: %6d stats/node/min" % (ranks, per_min, per_min / 10, naive))


if __name__ == "__main__":
    mp.set_start_method("fork")
    sys.exit(main())
