"""Hugging Face transformers: the Trainer saves and stops at the step all ranks agreed.

    import trainctl
    from trainctl.hf import TrainctlCallback
    stop = TrainctlCallback()        # a Controller from the environment, made at train begin
    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[stop])
    trainer.train(resume_from_checkpoint=trainctl.resume_path(args.output_dir))  # None: fresh
    if stop.decision.exit:           # a kill switch, the deadline, a notice: all saved
        print("stopped at step", stop.step, "because", stop.decision.reason)

After every optimizer step every rank calls Controller.check(global_step), one small
collective over torch.distributed, so all ranks take the same decision at the same step.
A save (save switch) sets `should_save`: the Trainer writes checkpoint-<step> as at its
own save steps, whatever save_strategy says. An exit (kill switch, deadline, notice,
memory) also sets `should_training_stop`, so train() returns after that checkpoint; an
exit for `no-progress` (the array's last runs crashed before getting past the step this
one resumed at) stops without one.

Every save the Trainer makes (its own save steps too) is committed on each rank once its
part is written (on_save: the model and trainer state on rank 0, each rank's RNG state),
so trainctl.resume_path(args.output_dir) resumes from the newest checkpoint-<step> that
every rank finished, never one a rank died in; transformers' get_last_checkpoint takes
the newest directory, finished or not. A checkpoint-<step> the Trainer writes again in
place (after a resume from before it) is uncommitted from the step end that asks for it,
so a torn rewrite never reads as the earlier, finished one. (The Trainer's saves are
synchronous: on_save comes after the write.)

Evaluations and saves are phases for the hang clock: from the step end that asks for one
(should_evaluate, should_save) to on_evaluate / on_save, every rank is "in phase eval" or
"saving", judged by that phase's budget (--hang-phase-timeout, else learnt) instead of
--hang-timeout, so a long evaluation or checkpoint is no hang.

Neither `import trainctl` nor `import trainctl.hf` imports transformers: the class is
made, as a TrainerCallback, when TrainctlCallback is first named (PEP 562).
"""

import logging
import os

from .controller import Controller, Decision

__all__ = ["TrainctlCallback"]

_log = logging.getLogger("trainctl")


class _CallbackSteps:
    """What TrainctlCallback does at each of the Trainer's events; a class of its own so that
    this module imports without transformers (the callback class is made on first use)."""

    def __init__(self, controller=None):
        self._ctl = controller
        self._own = controller is None
        self.decision = Decision()
        self.step = None
        self._open = None  # the phase this callback opened: "eval", "save" or None

    def on_train_begin(self, args, state, control, **kwargs):
        if self._ctl is None:
            self._ctl = Controller()
        return control

    def on_step_end(self, args, state, control, **kwargs):
        d = self._ctl.check(state.global_step)
        if d.save or d.exit:
            self.decision, self.step = d, state.global_step
            if d.save or not d.saved:  # saved: no-progress, or the save just made is the last
                control.should_save = True
        if d.exit:
            control.should_training_stop = True
        # The Trainer evaluates, then saves, right after the step-end callbacks.
        if control.should_save:
            self._begin_write(args, state)
        if control.should_evaluate:
            self._enter("eval")
        elif control.should_save:
            self._enter("save")
        return control

    def _begin_write(self, args, state):
        # The save begins: a marker left in checkpoint-<step> by an earlier save of it
        # goes now, and on_save commits it again once written.
        self._ctl._save_starts(os.path.join(args.output_dir, "checkpoint-%d" % state.global_step))

    def on_evaluate(self, args, state, control, **kwargs):
        if self._open == "eval":
            self._leave()
            if control.should_save:
                self._enter("save")
        return control

    def on_save(self, args, state, control, **kwargs):
        # The Trainer wrote checkpoint-<step> (transformers' PREFIX_CHECKPOINT_DIR) in
        # output_dir; this rank's part of it is in place.
        path = os.path.join(args.output_dir, "checkpoint-%d" % state.global_step)
        if os.path.isdir(path):
            self._ctl.saved(state.global_step, path)
        else:  # hyperparameter search saves under a run directory of its own
            _log.warning("trainctl: %s is not there on this rank: this save is not committed, so "
                         "trainctl.resume_path will not resume from it", path)
        if self._open == "save":
            self._leave()
        return control

    def _enter(self, name):
        self._leave()
        self._ctl.phase_begin(name)
        self._open = name

    def _leave(self):
        if self._open is not None and self._ctl is not None:
            self._open = None
            self._ctl.phase_end()

    def on_train_end(self, args, state, control, **kwargs):
        self._leave()
        if self._own and self._ctl is not None:
            self._ctl.close()
            self._ctl = None
        return control


def _make_callback_class():
    try:
        from transformers import TrainerCallback
    except ImportError as e:
        raise ImportError("trainctl.hf.TrainctlCallback needs Hugging Face transformers "
                          "(pip install transformers): %s" % e) from e

    class TrainctlCallback(_CallbackSteps, TrainerCallback):
        """Polls trainctl at each step end; see the module text. `controller`: a Controller
        of yours (made at train begin from the environment when None). After train():
        `decision` is the last Decision and `step` the step it was taken at."""

    return TrainctlCallback


def __getattr__(name):
    if name == "TrainctlCallback":
        cls = _make_callback_class()
        globals()[name] = cls  # made once: later lookups find it here
        return cls
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
