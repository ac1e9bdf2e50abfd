"""trainctl.lightning's Callback. No reachable Debian release ships PyTorch Lightning
(bookworm, trixie and sid have none, and nothing comes from pip here), so its logic is
tested on a stand-in: the class made over `object` instead of Lightning's Callback, and
a trainer with only what the callback touches (global_step, should_stop,
save_checkpoint, strategy.cluster_environment). Where Lightning is installed, the class
is also made over its real Callback."""

import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import trainctl
from trainctl import lightning as tl


class _Env:
    def __init__(self, auto_requeue):
        self.auto_requeue = auto_requeue


class _Strategy:
    def __init__(self, auto_requeue):
        self.cluster_environment = _Env(auto_requeue)


class _Trainer:
    """What the callback uses of lightning.pytorch.Trainer."""

    def __init__(self, auto_requeue=False):
        self.global_step = 0
        self.global_rank = 0
        self.should_stop = False
        self.strategy = _Strategy(auto_requeue)
        self.saved = []

    def save_checkpoint(self, path):
        with open(path, "w") as f:
            f.write("checkpoint")
        self.saved.append(os.path.basename(path))


class _AsyncIO:
    """What the callback uses of Lightning's AsyncCheckpointIO: one executor thread that
    writes each checkpoint after save_checkpoint returned, and the error it kept."""

    def __init__(self, gate):
        import concurrent.futures
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self._error = None
        self.gate, self.fail = gate, None

    def save_checkpoint(self, path):
        def write():
            self.gate.wait(10)
            if self.fail is not None:
                self._error = self.fail
                return
            with open(path, "w") as f:
                f.write("checkpoint")
        self._executor.submit(write)

    def shutdown(self):
        self._executor.shutdown(wait=True)


class _AsyncTrainer(_Trainer):
    def __init__(self):
        import threading
        super().__init__()
        self.gate = threading.Event()
        self.strategy.checkpoint_io = _AsyncIO(self.gate)

    def save_checkpoint(self, path):
        self.strategy.checkpoint_io.save_checkpoint(path)
        self.saved.append(os.path.basename(path))


class _Deciding:
    """A stand-in Controller whose every check() returns one decision."""

    def __init__(self, decision):
        self.decision = decision

    def check(self, step):
        return self.decision

    def phase(self, name):
        raise AssertionError("no phase expected: nothing is saved")


class CallbackTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="trainctl-lightning-")
        self.kill = os.path.join(self.dir, "KILL")
        self.save = os.path.join(self.dir, "SAVE")
        self.ckpt = os.path.join(self.dir, "checkpoints")
        self.ctl = trainctl.Controller(kill_switch=self.kill, save_switch=self.save, signals="none",
                                       poll_interval="100ms", state_path=os.path.join(self.dir, "state"))
        self.cb = tl._make_callback_class(object)(self.ckpt, self.ctl)

    def tearDown(self):
        self.ctl.close()
        shutil.rmtree(self.dir)

    def batch(self, trainer, step):
        trainer.global_step = step
        self.cb.on_train_batch_end(trainer, None, None, None, step)

    def test_a_save_writes_a_checkpoint_and_an_exit_also_stops_the_fit(self):
        trainer = _Trainer()
        self.cb.on_fit_start(trainer, None)
        self.assertIsNone(self.cb.last_checkpoint(), "nothing to resume from the first time")
        self.batch(trainer, 1)
        self.assertEqual(trainer.saved, [])
        open(self.save, "w").close()
        time.sleep(0.5)
        self.batch(trainer, 2)
        self.assertEqual((trainer.saved, trainer.should_stop), (["step_2.ckpt"], False))
        self.assertEqual((self.cb.step, self.cb.decision.save_reason), (2, "save-switch"))
        self.cb.on_validation_start(trainer, None)  # the hang clock's "eval" phase, and out
        self.cb.on_validation_end(trainer, None)
        open(self.kill, "w").close()
        time.sleep(0.5)
        self.batch(trainer, 3)
        self.assertEqual((trainer.saved, trainer.should_stop), (["step_2.ckpt", "step_3.ckpt"], True))
        self.assertEqual((self.cb.decision.exit, self.cb.decision.reason), (True, "kill-switch"))
        self.assertEqual(self.cb.last_checkpoint(), os.path.join(self.ckpt, "step_3.ckpt"))
        trainer.save_checkpoint(os.path.join(self.ckpt, "step_9.ckpt"))  # written, never committed
        self.assertEqual(self.cb.last_checkpoint(), os.path.join(self.ckpt, "step_3.ckpt"))
        self.cb.on_fit_end(trainer, None)

    def test_an_exit_whose_state_is_saved_stops_the_fit_without_a_checkpoint(self):
        # decision.saved: no-progress, or a supervisor went away during the save just made.
        cb = tl._make_callback_class(object)(self.ckpt, _Deciding(trainctl.Decision(True, reason="signal", saved=True)))
        trainer = _Trainer()
        cb.on_fit_start(trainer, None)
        trainer.global_step = 4
        cb.on_train_batch_end(trainer, None, None, None, 4)
        self.assertEqual((trainer.saved, trainer.should_stop), ([], True))

    def test_with_async_checkpoint_io_rank_0_commits_when_the_write_ends(self):
        # Lightning's AsyncCheckpointIO: save_checkpoint returns at once and one executor
        # thread writes the file. The save is committed when that write ended, not before.
        import concurrent.futures
        import threading
        trainer = _AsyncTrainer()
        self.cb.on_fit_start(trainer, None)
        open(self.save, "w").close()
        time.sleep(0.5)
        self.batch(trainer, 2)
        path = os.path.join(self.ckpt, "step_2.ckpt")
        self.assertIsNone(self.cb.last_checkpoint(), "committed while the write was in flight")
        trainer.gate.set()
        self.assertEqual(self.ctl.wait_for_saves(10), 0)
        self.assertEqual(self.cb.last_checkpoint(), path)
        # A write that failed in Lightning's thread (its _error) commits nothing.
        trainer.gate.clear()
        trainer.strategy.checkpoint_io.fail = OSError(28, "No space left on device")
        open(self.save, "w").close()
        time.sleep(0.5)
        self.batch(trainer, 4)
        trainer.gate.set()
        self.assertEqual(self.ctl.wait_for_saves(10), 0)
        self.assertEqual(self.cb.last_checkpoint(), path)
        trainer.strategy.checkpoint_io.shutdown()
        self.assertIsInstance(threading.current_thread(), threading.Thread)
        self.assertTrue(concurrent.futures)

    def test_lightnings_own_auto_requeue_is_named_once_at_fit_start(self):
        with self.assertLogs("trainctl", "WARNING") as said:
            self.cb.on_fit_start(_Trainer(auto_requeue=True), None)
        self.assertEqual(len(said.output), 1)
        self.assertIn("SLURMEnvironment(auto_requeue=False)", said.output[0])


class LazyImportTest(unittest.TestCase):
    def test_the_module_imports_without_lightning_and_the_class_says_what_it_needs(self):
        code = ("import sys, trainctl.lightning as tl\n"
                "assert 'lightning' not in sys.modules and 'pytorch_lightning' not in sys.modules\n"
                "try:\n    tl.TrainctlCallback\nexcept ImportError as e:\n    print('needs:', e)\n"
                "else:\n    print('made over', tl.TrainctlCallback.__mro__[1].__module__)\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        self.assertTrue(out.startswith("needs: trainctl.lightning.TrainctlCallback needs PyTorch Lightning")
                        or out.startswith("made over"), out)


if __name__ == "__main__":
    unittest.main()
