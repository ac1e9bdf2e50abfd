"""The stall of ctl.snapshot() per GiB against this machine's memory copy rate (the limit
it cannot beat): run under a supervisor, whose node state sits in memory (tmpfs), as

    build/bin/trainctl-run --state=/dev/shm/bench-snapshot/state -- python3 tests/bench/bench_snapshot.py

(scripts/bench does). Sizes of 64 MiB to 1 GiB; for each: a plain memory copy (bytearray
slice), the snapshot of a bytes object (pickle, then the copy into the slot), and where
torch imports, of a state dict of float32 tensors (torch.save, then the copy). Median of
3, in seconds per GiB and GiB/s."""

import os
import statistics
import sys
import time

import trainctl

GIB = 1 << 30


def timed(fn, runs=3):
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def row(what, size, seconds):
    per_gib = seconds * GIB / size
    print("%-34s %6d MiB  %7.3f s/GiB  %6.2f GiB/s" % (what, size >> 20, per_gib, 1 / per_gib), flush=True)


def main():
    if not os.environ.get("TRAINCTL_STATE"):
        sys.exit("bench_snapshot: run it under trainctl-run (see its text): snapshots need a supervisor")
    ctl = trainctl.Controller()
    ckpt = os.path.abspath("bench-snapshot-ckpt")  # written out only if a rank died: never here
    try:
        import torch
    except ImportError:
        torch = None
    step = 0
    for mib in (64, 256, 1024):
        size = mib << 20
        data = bytes(size)
        target = bytearray(size)

        def copy():
            target[:] = data
        row("memory copy (bytearray)", size, timed(copy))

        def snap_bytes():
            nonlocal step
            step += 1
            assert ctl.snapshot(step, data, ckpt)
        row("ctl.snapshot(bytes), pickle", size, timed(snap_bytes))
        if torch is not None:
            state = {"w%d" % i: torch.ones(size // 16) for i in range(4)}  # float32: 4 tensors of size/4 bytes

            def snap_tensors():
                nonlocal step
                step += 1
                assert ctl.snapshot(step, state, ckpt)
            row("ctl.snapshot(tensors), torch.save", size, timed(snap_tensors))
            del state
        del data, target
    ctl.close()


if __name__ == "__main__":
    main()
