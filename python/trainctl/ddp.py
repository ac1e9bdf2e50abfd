"""Automatic compute marks for torch DistributedDataParallel.

    model = DDP(net)
    trainctl.watch_ddp(model, ctl)

In data-parallel training every step ends in an all_reduce of the gradients, where the
fast ranks wait for the slowest: wall time per step is the same on every rank, and a
slow rank cannot be told from the others by it. DDP calls its communication hook when a
gradient bucket is ready, that is when this rank's own backward has produced it. This
hook marks the rank's compute as the time from the end of the previous step's gradient
communication to the moment its last bucket is ready (data loading, forward, backward,
optimizer step: everything but the wait for other ranks), then runs the communication
DDP would have run. torch is imported only here, only when called.
"""

from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:  # for the annotations only: no import cycle at run time
    from .controller import Controller


def watch_ddp(model: Any, ctl: "Controller", hook: Optional[Callable[..., Any]] = None,
              state: Any = None) -> None:
    """Registers the timing hook on `model` (a torch DistributedDataParallel). `hook` and
    `state` are the communication hook to wrap and its state; by default DDP's own
    all_reduce (torch.distributed.algorithms.ddp_comm_hooks.default_hooks.allreduce_hook
    with the model's process group). A model takes one communication hook: register
    yours through `hook` rather than calling register_comm_hook again."""
    if hook is None:
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
        hook = default_hooks.allreduce_hook
        state = getattr(model, "process_group", None) if state is None else state

    def timed(hook_state, bucket):
        last = bucket.is_last()
        if last:
            ctl.compute_end()
        fut = hook(hook_state, bucket)
        if not last:
            return fut

        def done(f):
            ctl.compute_begin()  # the next step's own work starts now
            return f.value()

        return fut.then(done)

    model.register_comm_hook(state, timed)
    return model
