"""What a save costs the loop, and how long until it counts: a synchronous and an
asynchronous DCP save of the same state, through trainctl, under torchrun (gloo).

For each kind, one save at a step trainctl decided (the save switch's path: a decision,
then the loop's save), and what trainctl measured of it: the blocking part (the
decision to the loop's next call: what --graceful-exit=auto learnt before issue 61) and
the time to its commit (what it learns now: the whole write). Prints one line per kind
on rank 0. Run in sid's root (torch 2.x has async_save), for example:

    scripts/testbed shell sid sh -c 'cd /var/tmp && PYTHONPATH=/var/tmp/trainctl-build/lib/python3/dist-packages \\
      python3 /src/tests/e2e/torchrun_shim.py --standalone --nproc_per_node=2 \\
      /src/tests/bench/bench_async_save.py --mb 256 --dir /var/tmp/bench-async'
"""

import argparse
import os
import shutil
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

import trainctl


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=float, default=256, help="the state each rank saves (MB)")
    p.add_argument("--dir", default="/var/tmp/bench-async", help="where the checkpoints go (a local disk)")
    args = p.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    pg = dist.new_group(backend="gloo")
    if rank == 0:
        shutil.rmtree(args.dir, ignore_errors=True)
    dist.barrier()
    state = {"weights": torch.rand(int(args.mb * 262144)), "step": torch.tensor(0)}
    ctl = trainctl.Controller(signals="none", check_every=1)
    results = {}
    for kind in ("sync", "async"):
        path = os.path.join(args.dir, kind)
        began = time.monotonic()
        with ctl.saving(1, path) as save:
            if kind == "sync":
                dcp.save(state, checkpoint_id=path, process_group=pg)
            else:
                save.pending = dcp.async_save(state, checkpoint_id=path, process_group=pg)
        blocking = time.monotonic() - began
        ctl.wait_for_saves()
        to_commit = time.monotonic() - began
        dist.barrier()
        results[kind] = (blocking, to_commit)
    ctl.close()
    if rank == 0:
        mb = args.mb * dist.get_world_size()
        for kind, (blocking, to_commit) in results.items():
            print("bench_async_save: %-5s save of %.0f MB (%d ranks x %.0f MB): %.2f s blocking, %.2f s to commit; "
                  "auto learnt %.2f s before issue 61, %.2f s now" % (kind, mb, dist.get_world_size(), args.mb,
                                                                    blocking, to_commit, blocking, to_commit),
                  flush=True)
        print("bench_async_save: torch %s" % torch.__version__, flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
