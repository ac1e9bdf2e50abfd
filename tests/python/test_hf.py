"""trainctl.hf's TrainerCallback against transformers' own TrainerState and TrainerControl
(skipped where this Python has no transformers; sid's python3-transformers has it)."""

import os
import shutil
import tempfile
import time
import unittest

import trainctl

try:
    import transformers  # noqa: F401
except ImportError:
    transformers = None


@unittest.skipIf(transformers is None, "this Python has no transformers")
class TrainerCallbackTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="trainctl-hf-")
        self.kill = os.path.join(self.dir, "KILL")
        self.save = os.path.join(self.dir, "SAVE")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def step(self, cb, n):
        from transformers import TrainerControl, TrainerState
        state, control = TrainerState(), TrainerControl()
        state.global_step = n
        return cb.on_step_end(None, state, control)

    def test_a_save_sets_should_save_and_an_exit_also_stops(self):
        from trainctl.hf import TrainctlCallback
        ctl = trainctl.Controller(kill_switch=self.kill, save_switch=self.save, signals="none",
                                  poll_interval="100ms", state_path=os.path.join(self.dir, "state"))
        cb = TrainctlCallback(ctl)
        control = self.step(cb, 1)
        self.assertFalse(control.should_save or control.should_training_stop)
        open(self.save, "w").close()
        time.sleep(0.5)
        control = self.step(cb, 2)
        self.assertTrue(control.should_save)
        self.assertFalse(control.should_training_stop)
        self.assertEqual((cb.step, cb.decision.save_reason), (2, "save-switch"))
        open(self.kill, "w").close()
        time.sleep(0.5)
        control = self.step(cb, 3)
        self.assertTrue(control.should_save and control.should_training_stop)
        self.assertEqual((cb.step, cb.decision.exit, cb.decision.reason), (3, True, "kill-switch"))
        ctl.close()


if __name__ == "__main__":
    unittest.main()
