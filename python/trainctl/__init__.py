"""trainctl: the flags a training loop polls to stop or checkpoint in time.

    import trainctl
    ctl = trainctl.Controller()             # reads the environment, starts watching
    ckpt = trainctl.resume_path("ckpt")     # the newest save every rank committed; None: fresh
    start = load_checkpoint(ckpt) + 1 if ckpt else 0
    for step in range(start, steps):
        train_step()
        d = ctl.check(step)                 # agreed across ranks when torch.distributed is up;
                                            # MPI: ctl.check(step, allreduce=trainctl.mpi_allreduce(comm))
        if d.save or (d.exit and not d.saved):
            path = save_checkpoint(step)    # a name per save: ckpt/step_00001200/
            ctl.saved(step, path)           # on every rank, once its part is in place
                                            # async: ctl.saved(step, path, dcp.async_save(...))
        if d.exit: sys.exit(0)              # d.reason says why

Imports on Python 3.8+ with no compiler and without torch; the C library
(libtrainctl.so.0) is loaded when the first Controller is made.
"""

import ctypes
import logging
import os
from typing import Any, Optional, Union

from ._native import TrainctlError, VOTE_LEN

# The lines of the loop's own decisions (a save, an exit) are INFO: a program whose
# logging is set to WARNING (`logging.basicConfig()`) would drop them, so the logger
# "trainctl" shows INFO unless the program sets its level (as transformers' loggers
# carry a level of their own).
if logging.getLogger("trainctl").level == logging.NOTSET:
    logging.getLogger("trainctl").setLevel(logging.INFO)
from .controller import Controller, Decision
from .mpi import mpi_allreduce
from .collectives import watch_collectives
from .ddp import watch_ddp
from .snapshots import is_snapshot, load_snapshot
from .workers import dataloader_worker_init

__all__ = ["Controller", "Decision", "TrainctlError", "VOTE_LEN", "dataloader_worker_init", "is_snapshot",
           "load_snapshot", "mpi_allreduce", "resume_path", "run_id", "version", "watch_collectives", "watch_ddp"]


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


def run_id() -> str:
    """The run's id, the same in every task of a job array and every requeue of a job: for
    a logger that resumes a run (`wandb.init(id=trainctl.run_id(), resume="allow")`, an
    MLflow run name, a TensorBoard directory). TRAINCTL_RUN_ID when set to 1-64 of
    [A-Za-z0-9_.-] (give a job submitted again the id of the one it goes on from). The
    supervisor of the job's batch script sets it to <SLURM_CLUSTER_NAME>-<SLURM_ARRAY_JOB_ID,
    else SLURM_JOB_ID>-<the array's submit time, UTC, as 20261202T152554>: two arrays that
    got one job id (the controller's ids start again after its state is reset) are two
    runs. Without that supervisor, the id without the time; "" outside a SLURM job."""
    import ctypes
    from ._native import lib
    fn = getattr(lib(), "trainctl_run_id", None)
    if fn is None:  # a library before 0.1.1: what a supervisor set, if any
        return os.environ.get("TRAINCTL_RUN_ID", "")
    fn.restype, fn.argtypes = ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t]
    buf = ctypes.create_string_buffer(80)
    fn(buf, len(buf))
    return buf.value.decode()


def resume_path(ckpt_dir: Union[str, "os.PathLike[str]"]) -> Optional[str]:
    """Where to resume: the checkpoint in `ckpt_dir` (a directory or a file in it) with the
    highest step that every rank of its world committed with Controller.saved(); None for
    a fresh start (nothing committed yet, or no `ckpt_dir`). Never a save some rank did not
    finish or is still writing, one redone in place and not finished, a copy, a link, or
    a file another user put there. When `ckpt_dir` holds saves it cannot trust, rank 0
    logs one line: how many, and why (saves made without trainctl's markers, say, which
    would otherwise restart the run from step 0 unnoticed). TrainctlError when `ckpt_dir`
    exists but cannot be read, or is a link another user made."""
    from . import _native
    fn = _native.optional("trainctl_resume_path")
    directory = os.fsencode(ckpt_dir)
    size = 4096
    while True:
        buf = ctypes.create_string_buffer(size)
        n = _native.check(fn(directory, buf, size))
        if n < size:
            return os.fsdecode(buf.value) if n > 0 else None
        size = n + 1


def version() -> str:
    """The library's version as "major.minor.patch"."""
    from ._native import lib
    n = lib().trainctl_version()
    return "%d.%d.%d" % (n // 10000, n // 100 % 100, n % 100)
