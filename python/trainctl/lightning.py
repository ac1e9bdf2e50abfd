"""PyTorch Lightning: the Trainer saves and stops at the step all ranks agreed.

    import lightning.pytorch as pl
    from trainctl.lightning import TrainctlCallback
    stop = TrainctlCallback("checkpoints")   # where its saves go: checkpoints/step_<n>.ckpt
    trainer = pl.Trainer(callbacks=[stop])   # under torchrun: one launcher per node
    trainer.fit(model, datamodule, ckpt_path=stop.last_checkpoint())   # None: a fresh start
    if stop.decision.exit:                   # a kill switch, the deadline, a notice: all saved
        print("stopped at step", stop.step, "because", stop.decision.reason)

After every training batch every rank calls Controller.check(global_step), one small
collective over torch.distributed (Lightning set it up), so all ranks take the same
decision at the same step. A save (save switch) writes the checkpoint through
trainer.save_checkpoint on every rank (Lightning's rank 0 writes the file). An exit
(kill switch, deadline, notice, memory) saves the same way and sets trainer.should_stop,
so fit() returns after the batch; an exit for `no-progress` (the array's last runs
crashed before getting past the step this one resumed at) stops without a save. Each of
its saves is committed on every rank once save_checkpoint returned there, and
last_checkpoint() is trainctl.resume_path(ckpt_dir): the newest save every rank
finished, never one a rank died in. ckpt_dir must be one directory every node sees.

With Lightning's AsyncCheckpointIO (plugins=[AsyncCheckpointIO()]) the file is written in
its thread after save_checkpoint returns: rank 0, which writes it, commits when that write
ends (a failed write commits nothing, and says so), and the other ranks, which write
nothing, commit once rank 0's commit is there. The save counts to that commit.

How the ranks start decides Lightning's cluster environment. Under torchrun (one
launcher per node, as trainctl's template and pages launch) Lightning takes its ranks
from torchrun and its SLURM auto-requeue is off: pass no environment. With one srun task
per GPU instead (`srun --ntasks-per-node=8 python train.py`, no torchrun), Lightning's
SLURMEnvironment takes them from SLURM; pass
`plugins=[SLURMEnvironment(auto_requeue=False)]` (from
lightning.pytorch.plugins.environments): its auto-requeue also acts on SIGUSR1, the
signal trainctl relays before the time limit, and with both, Lightning requeues the job
while the next array task resumes from trainctl's save, and two runs train from the same
checkpoint. The callback says so once, at fit start, when Lightning's is on.

Validation runs are a phase for the hang clock (from on_validation_start to
on_validation_end every rank is "in phase eval"), and so is a save ("save"), so a long
evaluation or checkpoint is judged by that phase's budget, not --hang-timeout.

Neither `import trainctl` nor `import trainctl.lightning` imports Lightning: the class is
made, as a lightning.pytorch Callback (else pytorch_lightning's), when TrainctlCallback is
first named (PEP 562).
"""

import logging
import os

from . import resume_path
from .controller import Controller, Decision

__all__ = ["TrainctlCallback"]

_log = logging.getLogger("trainctl")


def _make_callback_class(base):
    class TrainctlCallback(base):
        """Polls trainctl at each training batch end; see the module text. `ckpt_dir`:
        where its saves go (step_<n>.ckpt, made when missing). `controller`: a Controller
        of yours (made at fit start from the environment when None). After fit():
        `decision` is the last Decision and `step` the step it was taken at."""

        def __init__(self, ckpt_dir, controller=None):
            super().__init__()
            self.ckpt_dir = str(ckpt_dir)
            self._ctl = controller
            self._own = controller is None
            self.decision = Decision()
            self.step = None
            self._in_eval = False

        def last_checkpoint(self):
            """The newest checkpoint in ckpt_dir that every rank committed, or None:
            fit(ckpt_path=...) resumes there (trainctl.resume_path)."""
            return resume_path(self.ckpt_dir)

        def on_fit_start(self, trainer, pl_module):
            if self._ctl is None:
                self._ctl = Controller()
            env = getattr(getattr(trainer, "strategy", None), "cluster_environment", None)
            if getattr(env, "auto_requeue", False) and getattr(trainer, "global_rank", 0) == 0:
                _log.warning("trainctl: Lightning's SLURM auto-requeue is on and acts on SIGUSR1 too: both would "
                             "resume the run; pass plugins=[SLURMEnvironment(auto_requeue=False)] to the Trainer")

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            step = trainer.global_step
            d = self._ctl.check(step)
            if not (d.save or d.exit):
                return
            self.decision, self.step = d, step
            if d.save or not d.saved:  # saved: no-progress, or the save just made is the last
                os.makedirs(self.ckpt_dir, exist_ok=True)
                path = os.path.join(self.ckpt_dir, "step_%d.ckpt" % step)
                with self._ctl.saving(step, path) as save:
                    trainer.save_checkpoint(path)  # rank 0 writes it; every rank waits for it there
                    pending = _async_write(trainer, path)
                    if pending is not None:
                        save.pending = pending
                    elif not os.path.isfile(path):
                        save.pending = _failed("%s is not there on this rank: give ckpt_dir as a directory every "
                                               "node sees" % path)
            if d.exit:
                trainer.should_stop = True

        def on_validation_start(self, trainer, pl_module):
            if self._ctl is not None and not self._in_eval:
                self._ctl.phase_begin("eval")
                self._in_eval = True

        def on_validation_end(self, trainer, pl_module):
            if self._in_eval:
                self._in_eval = False
                self._ctl.phase_end()

        def on_fit_end(self, trainer, pl_module):
            self.on_validation_end(trainer, pl_module)
            if self._own and self._ctl is not None:
                self._ctl.close()
                self._ctl = None

    return TrainctlCallback


def _failed(why):
    """A write that ended in `why`: nothing is committed, and the library says so."""
    import concurrent.futures
    done = concurrent.futures.Future()
    done.set_exception(OSError(why))
    return done


# How long a rank other than 0 waits for rank 0's commit of an asynchronous save: past
# it, this rank commits nothing (rank 0's write failed, or never ends).
_RANK0_COMMIT_WAIT_S = 3600


def _async_write(trainer, path):
    """The write that goes on after save_checkpoint returned, under Lightning's
    AsyncCheckpointIO (its single-thread executor writes in order), or None when the
    save was synchronous. On rank 0, which writes: a task after the write in the same
    executor, ending in the write's error if it had one. On the other ranks, which write
    nothing: a thread's wait for rank 0's commit marker beside the file (this user's
    regular file, never followed through a link)."""
    io = getattr(getattr(trainer, "strategy", None), "checkpoint_io", None)
    executor = getattr(io, "_executor", None)
    if executor is None or not callable(getattr(executor, "submit", None)):
        return None
    if getattr(trainer, "global_rank", 0) == 0:
        def after_the_write():
            error = getattr(io, "_error", None)
            if error is not None:
                raise error
            if not os.path.isfile(path):
                raise OSError("%s was not written" % path)
        return executor.submit(after_the_write)
    import concurrent.futures
    import stat
    import threading
    import time
    marker = os.path.join(os.path.dirname(path), ".%s.trainctl-committed.0" % os.path.basename(path))
    done = concurrent.futures.Future()

    def wait_for_rank0():
        give_up = time.monotonic() + _RANK0_COMMIT_WAIT_S
        while time.monotonic() < give_up:
            try:
                st = os.lstat(marker)
                if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid():
                    done.set_result(None)
                    return
            except OSError:
                pass
            time.sleep(0.5)
        done.set_exception(OSError("rank 0 did not commit %s within %d s" % (path, _RANK0_COMMIT_WAIT_S)))

    threading.Thread(target=wait_for_rank0, name="trainctl-lightning-commit", daemon=True).start()
    return done


def _lightning_callback_base():
    try:
        from lightning.pytorch import Callback
    except ImportError:
        try:
            from pytorch_lightning import Callback
        except ImportError as e:
            raise ImportError("trainctl.lightning.TrainctlCallback needs PyTorch Lightning "
                              "(pip install lightning): %s" % e) from e
    return Callback


def __getattr__(name):
    if name == "TrainctlCallback":
        cls = _make_callback_class(_lightning_callback_base())
        globals()[name] = cls  # made once: later lookups find it here
        return cls
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
