"""slurm_templates/train_example.py, the script users copy, run alone by this Python
(no torch here): it trains to the end, exits at once on a kill switch with a complete
checkpoint, and the next run resumes at the step after it."""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "slurm_templates", "train_example.py")


class TrainExampleTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="trainctl-example-")
        self.ckpt = os.path.join(self.dir, "ckpt")
        self.kill = os.path.join(self.dir, "KILL")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def run_example(self, steps):
        env = dict(os.environ, KILL_SWITCH=self.kill, SAVE_SWITCH=os.path.join(self.dir, "SAVE"),
                   TRAINCTL_STATE=os.path.join(self.dir, "state"), TRAINCTL_SIGNALS="none")
        for name in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "LOCAL_RANK"):
            env.pop(name, None)
        events = os.path.join(self.dir, "events.jsonl")
        p = subprocess.run([sys.executable, EXAMPLE, "--ckpt-dir", self.ckpt, "--steps", str(steps),
                            "--step-time", "0", "--events", events],
                           env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(events) as f:
            return [json.loads(line) for line in f]

    def checkpoints(self):
        """The saves every rank (here: one) committed."""
        return sorted(os.path.basename(d) for d in glob.glob(self.ckpt + "/step_*")
                      if os.path.exists(os.path.join(d, ".trainctl-committed.0")))

    def test_trains_to_the_end(self):
        ev = self.run_example(25)
        self.assertEqual([e["event"] for e in ev], ["start", "save", "finished"])
        self.assertEqual(self.checkpoints(), ["step_00000024"])
        self.assertTrue(os.path.exists(os.path.join(self.ckpt, "FINISHED")))
        self.assertFalse(os.path.exists(os.path.join(self.ckpt, "SAVING")), "the save marker was left behind")

    def test_kill_switch_then_resume(self):
        open(self.kill, "w").close()
        ev = self.run_example(25)
        self.assertEqual([(e["event"], e.get("reason")) for e in ev],
                         [("start", None), ("save", None), ("exit", "kill-switch")])
        self.assertEqual(self.checkpoints(), ["step_00000000"])
        os.unlink(self.kill)
        ev = self.run_example(25)
        start = [e for e in ev if e["event"] == "start"][-1]
        self.assertEqual((start["step"], start["resumed_from"]), (1, 0))
        self.assertEqual(ev[-1]["event"], "finished")

    def test_a_save_one_rank_did_not_commit_is_not_resumed_from(self):
        # The first run commits step 0 on the kill switch; the second run's save of the
        # last step fails on its only rank (it raises): the third resumes from step 0 again.
        open(self.kill, "w").close()
        self.run_example(25)
        os.unlink(self.kill)
        env = dict(os.environ, TRAINCTL_STATE=os.path.join(self.dir, "state"), TRAINCTL_SIGNALS="none")
        p = subprocess.run([sys.executable, EXAMPLE, "--ckpt-dir", self.ckpt, "--steps", "25", "--step-time", "0",
                            "--fail-save", "0:1"], env=env, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("its part of the save at step 24 failed", p.stderr)
        self.assertTrue(os.path.isdir(os.path.join(self.ckpt, "step_00000024")), "the failed save's files")
        self.assertEqual(self.checkpoints(), ["step_00000000"])
        ev = self.run_example(25)
        self.assertEqual([e["resumed_from"] for e in ev if e["event"] == "start"][-1], 0)
        self.assertEqual(ev[-1]["event"], "finished")
        self.assertEqual(self.checkpoints(), ["step_00000000", "step_00000024"], "the failed save replaced whole")
        self.assertEqual([n for n in os.listdir(self.ckpt) if n.startswith(".replaced")], [])

    def test_a_teammates_links_touch_nothing_outside(self):
        # Issue 33: in a group-writable project directory a teammate's SAVING link made
        # the save truncate a file of the user's, and an events link appended to .bashrc.
        # The loop follows no link: the files stay as they were, the run still saves, and
        # a planted checkpoint (not the user's, or a link) is not resumed from.
        home = os.path.join(self.dir, "home")
        os.mkdir(home)
        precious, bashrc = os.path.join(home, "precious"), os.path.join(home, ".bashrc")
        for path in (precious, bashrc):
            with open(path, "w") as f:
                f.write("keep\n")
        os.mkdir(self.ckpt)
        os.symlink(precious, os.path.join(self.ckpt, "SAVING"))
        os.symlink(bashrc, os.path.join(self.dir, "events.jsonl"))
        planted = os.path.join(self.dir, "elsewhere")
        os.mkdir(planted)
        with open(os.path.join(planted, ".trainctl-committed.0"), "w") as f:
            f.write("trainctl-commit 1 step=99 rank=0 world=1 run=-\n")
        os.symlink(planted, os.path.join(self.ckpt, "step_00000099"))
        env = dict(os.environ, TRAINCTL_STATE=os.path.join(self.dir, "state"), TRAINCTL_SIGNALS="none")
        p = subprocess.run([sys.executable, EXAMPLE, "--ckpt-dir", self.ckpt, "--steps", "5", "--step-time", "0",
                            "--events", os.path.join(self.dir, "events.jsonl")],
                           env=env, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0, "events through a link were opened")
        self.assertIn("events.jsonl", p.stderr)
        for path in (precious, bashrc):
            with open(path) as f:
                self.assertEqual(f.read(), "keep\n", path)
        os.unlink(os.path.join(self.dir, "events.jsonl"))
        ev = self.run_example(5)
        self.assertEqual(ev[0]["resumed_from"], None, "resumed from a checkpoint that is a link")
        self.assertEqual(ev[-1]["event"], "finished")
        self.assertIn("step_00000004", self.checkpoints())
        with open(precious) as f:
            self.assertEqual(f.read(), "keep\n", "the save truncated the file SAVING pointed to")
        self.assertTrue(os.path.islink(os.path.join(self.ckpt, "SAVING")), "the teammate's link went without a trace")

    def test_imports_no_torch_where_it_uses_none(self):
        # Starting torch costs seconds of CPU: a run of one process, or of ranks that agree
        # through a group their launcher gives, must not import it.
        has_torch = "import importlib.util, sys; sys.exit(not importlib.util.find_spec('torch'))"  # not imported
        python = next((p for p in ("/usr/bin/python3", sys.executable)
                       if subprocess.run([p, "-c", has_torch], capture_output=True).returncode == 0), None)
        if python is None:
            self.skipTest("no Python with torch here")
        env = dict(os.environ, TRAINCTL_STATE=os.path.join(self.dir, "state"), TRAINCTL_SIGNALS="none")
        for name in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "LOCAL_RANK"):
            env.pop(name, None)
        code = ("import runpy, sys\nsys.argv = sys.argv[1:]\n"
                "try:\n    runpy.run_path(sys.argv[0], run_name='__main__')\n"
                "except SystemExit as e:\n    assert not e.code, e.code\n"
                "print('torch imported' if 'torch' in sys.modules else 'no torch')\n")
        p = subprocess.run([python, "-c", code, EXAMPLE, "--ckpt-dir", self.ckpt, "--steps", "3", "--step-time", "0"],
                           env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip().splitlines()[-1], "no torch", p.stdout)


if __name__ == "__main__":
    unittest.main()
