"""trainctl: the flags a training loop polls to stop or checkpoint in time.

    import trainctl
    ctl = trainctl.Controller()      # reads the environment, starts watching
    for step, batch in enumerate(loader):
        train_step(batch)
        d = ctl.check(step)          # agreed across ranks when torch.distributed is up;
                                     # MPI: ctl.check(step, allreduce=trainctl.mpi_allreduce(comm))
        if d.save or (d.exit and not d.saved): save_checkpoint(step)
        if d.exit: sys.exit(0)       # d.reason says why

Imports on Python 3.8+ with no compiler and without torch; the C library
(libtrainctl.so.0) is loaded when the first Controller is made.
"""

from typing import Any

from ._native import TrainctlError, VOTE_LEN
from .controller import Controller, Decision, mpi_allreduce
from .collectives import watch_collectives
from .ddp import watch_ddp

__all__ = ["Controller", "Decision", "TrainctlError", "VOTE_LEN", "mpi_allreduce", "version", "watch_collectives",
           "watch_ddp"]


def __getattr__(name: str) -> Any:
    """trainctl.hf and trainctl.lightning, imported when first named (they need no
    transformers or Lightning until their TrainctlCallback is); trainctl.__version__,
    the loaded library's version()."""
    if name == "__version__":
        return version()
    if name in ("hf", "lightning"):
        import importlib
        return importlib.import_module("." + name, __name__)
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def version() -> str:
    """The library's version as "major.minor.patch"."""
    from ._native import lib
    n = lib().trainctl_version()
    return "%d.%d.%d" % (n // 10000, n // 100 % 100, n % 100)
