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

    def step(self, cb, n, control=None):
        from types import SimpleNamespace

        from transformers import TrainerControl, TrainerState
        state, control = TrainerState(), control or TrainerControl()
        state.global_step = n
        return cb.on_step_end(SimpleNamespace(output_dir=os.path.join(self.dir, "out")), state, control)

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

    def test_on_save_commits_the_checkpoint_resume_path_then_returns(self):
        from types import SimpleNamespace

        from transformers import TrainerControl, TrainerState

        from trainctl.hf import TrainctlCallback
        ctl = trainctl.Controller(signals="none", state_path=os.path.join(self.dir, "state"), rank="0")
        cb, out = TrainctlCallback(ctl), os.path.join(self.dir, "out")
        state, args = TrainerState(), SimpleNamespace(output_dir=out)
        os.makedirs(os.path.join(out, "checkpoint-7"))
        state.global_step = 7
        cb.on_save(args, state, TrainerControl())
        self.assertEqual(trainctl.resume_path(out), os.path.join(out, "checkpoint-7"))
        state.global_step = 9  # saved elsewhere (a hyperparameter search's run directory)
        with self.assertLogs("trainctl", "WARNING") as said:
            cb.on_save(args, state, TrainerControl())
        self.assertIn("checkpoint-9 is not there on this rank", said.output[0])
        self.assertEqual(trainctl.resume_path(out), os.path.join(out, "checkpoint-7"))
        ctl.close()

    def test_a_checkpoint_saved_again_in_place_is_uncommitted_until_on_save(self):
        # After a resume from before step 7, the Trainer writes checkpoint-7 again in place:
        # from the step end that asks for it, the earlier commit no longer counts.
        from types import SimpleNamespace

        from transformers import TrainerControl, TrainerState

        from trainctl.hf import TrainctlCallback
        ctl = trainctl.Controller(signals="none", state_path=os.path.join(self.dir, "state"), rank="0")
        cb, out = TrainctlCallback(ctl), os.path.join(self.dir, "out")
        path = os.path.join(out, "checkpoint-7")
        os.makedirs(path)
        self.assertTrue(ctl.saved(7, path))
        self.assertEqual(trainctl.resume_path(out), path)
        asked = TrainerControl()
        asked.should_save = True  # the Trainer's own save step
        self.step(cb, 7, asked)
        self.assertIsNone(trainctl.resume_path(out), "a torn rewrite would read as the finished save")
        state = TrainerState()
        state.global_step = 7
        cb.on_save(SimpleNamespace(output_dir=out), state, TrainerControl())
        self.assertEqual(trainctl.resume_path(out), path)
        ctl.close()

    def test_an_exit_whose_state_is_saved_stops_without_a_save(self):
        # decision.saved: no-progress, or a supervisor went away during the save just made.
        from trainctl.hf import TrainctlCallback

        class Deciding:
            def check(self, step):
                return trainctl.Decision(True, reason="no-progress", saved=True)

        control = self.step(TrainctlCallback(Deciding()), 5)
        self.assertTrue(control.should_training_stop)
        self.assertFalse(control.should_save)


if __name__ == "__main__":
    unittest.main()


class LazySubmoduleTest(unittest.TestCase):
    """trainctl.hf after a bare `import trainctl`, in a fresh interpreter: the module is
    there, transformers is not imported until TrainctlCallback is named."""

    def run_python(self, code):
        import subprocess
        import sys
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    def test_trainctl_hf_is_there_without_importing_transformers(self):
        r = self.run_python("import sys, trainctl; m = trainctl.hf; "
                            "print(m.__name__, 'transformers' in sys.modules)")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.split(), ["trainctl.hf", "False"])

    def test_naming_the_callback_imports_transformers_or_says_it_is_missing(self):
        r = self.run_python("import sys, trainctl; trainctl.hf.TrainctlCallback; "
                            "print('transformers' in sys.modules)")
        if transformers is None:
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("transformers", r.stderr)
        else:
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.split(), ["True"])

    def test_an_unknown_attribute_is_an_attribute_error(self):
        r = self.run_python("import trainctl\ntry:\n    trainctl.nope\nexcept AttributeError as e:\n    print(e)")
        self.assertEqual(r.stdout.strip(), "module 'trainctl' has no attribute 'nope'")
