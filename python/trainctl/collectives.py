"""Compute marks for loops that call torch.distributed collectives themselves.

    ctl = trainctl.Controller()
    trainctl.watch_collectives(ctl)      # once, after init_process_group
    for step, batch in enumerate(loader):
        loss = model(batch).sum(); loss.backward()
        for p in model.parameters():      # or FSDP, which calls them for you
            dist.all_reduce(p.grad)
        d = ctl.check(step)

A collective waits for the slowest rank, so the wall time of a step is the same on every
rank and a slow rank cannot be told from the others by it. This marks a rank's compute as
the time outside torch.distributed's collectives and outside the waits of their async
handles (Work.wait): what is left is this rank's own work, which the straggler finding
compares. Collectives issued from C++ are not seen (DDP's gradient all_reduce: use
watch_ddp). A name bound before the call (`from torch.distributed import all_reduce`) is
not seen either: call it before such imports, or use `dist.all_reduce`.

It is a choice, not a default: it replaces functions of torch.distributed in this
process (the originals stay reachable as `__wrapped__`), which a loop should decide on,
as it decides on a profiler. torch is imported only here, only when called.
"""

import functools
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for the annotations only: no import cycle at run time
    from .controller import Controller

# The collectives of torch.distributed a training loop or FSDP calls from Python; the ones
# a given torch lacks are skipped.
_NAMES = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "_all_gather_base", "all_gather_object",
    "reduce_scatter", "reduce_scatter_tensor", "_reduce_scatter_base", "broadcast", "broadcast_object_list",
    "reduce", "barrier", "all_to_all", "all_to_all_single", "gather", "scatter", "monitored_barrier",
)

_lock = threading.Lock()
_target = [None]  # the Controller the marks go to (the last watch_collectives call's)


def _mark(end):
    ctl = _target[0]
    if ctl is None:
        return
    try:
        (ctl.compute_end if end else ctl.compute_begin)()
    except Exception:  # a closed Controller: no more marks, the collective itself goes on
        _target[0] = None


def _timed(fn):
    @functools.wraps(fn)
    def timed(*args, **kwargs):
        _mark(True)
        try:
            return fn(*args, **kwargs)
        finally:
            _mark(False)

    timed._trainctl_timed = True
    return timed


def watch_collectives(ctl: "Controller") -> None:
    """Marks `ctl`'s compute as the time outside torch.distributed's collectives from now
    on (see the module text). Calling it again moves the marks to another Controller;
    the functions are replaced once per process."""
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d

    with _lock:
        _target[0] = ctl
        for module in (dist, c10d):
            for name in _NAMES:
                fn = getattr(module, name, None)
                if fn is None or getattr(fn, "_trainctl_timed", False):
                    continue
                setattr(module, name, _timed(fn))
        work = getattr(c10d, "Work", None) or getattr(dist, "Work", None)
        if work is not None and not getattr(work.wait, "_trainctl_timed", False):
            work.wait = _timed(work.wait)
    ctl.compute_begin()
