"""A torch DataLoader's workers through the SIGTERM SLURM sends to every process of the
step at a preemption (KempnerForge#177): the rank catches it and saves at its next step,
but torch's worker dies of it, and the rank's next batch raised "DataLoader worker ...
exited unexpectedly" before the save. Workers forked once a Controller exists ignore the
notice signals, and so do spawned workers that run trainctl.dataloader_worker_init;
workers forked before it are not protected: the control, which dies.
Runs a Python with torch (Debian's /usr/bin/python3) in a session of its own, as a rank
in a job step, and signals the whole session as slurmstepd does."""

import os
import signal
import subprocess
import sys
import tempfile
import unittest

import trainctl

LOOP = r"""
import sys, time
import torch
from torch.utils.data import DataLoader, Dataset
import trainctl


class Slow(Dataset):
    def __len__(self):
        return 1000000

    def __getitem__(self, i):
        time.sleep(0.01)
        return torch.ones(4)


if __name__ == "__main__":
    order, context, state = sys.argv[1:]
    init = trainctl.dataloader_worker_init if context != "fork" else None  # a fresh interpreter: no fork hook
    loader = DataLoader(Slow(), batch_size=4, num_workers=2, multiprocessing_context=context, worker_init_fn=init)
    batches = iter(loader) if order == "workers-first" else None  # forked before the Controller
    ctl = trainctl.Controller(signals="USR1,TERM", state_path=state)
    batches = batches or iter(loader)
    for step, batch in enumerate(batches):
        if step == 1:
            print("ready", flush=True)  # the workers have made batches: the test signals the session
        d = ctl.check(step)
        if d.exit:
            # A save reads from the loader too (its state, the batches in flight): more
            # batches than the loader holds ready (2 workers x prefetch_factor 2), so that
            # the rank needs live workers, whatever the workers had made before the signal.
            for _ in range(8):
                next(batches)
            print("saved at step %d: %s" % (step, d.reason), flush=True)
            sys.exit(0)
"""


def python_with_torch():
    probe = "import importlib.util, sys; sys.exit(not importlib.util.find_spec('torch'))"
    return next((p for p in ("/usr/bin/python3", sys.executable)
                 if os.path.exists(p) and subprocess.run([p, "-c", probe], capture_output=True).returncode == 0),
                None)


class DataLoaderWorkersTest(unittest.TestCase):
    def run_rank(self, python, order, context):
        with tempfile.TemporaryDirectory(prefix="trainctl-dl-") as d:
            loop = os.path.join(d, "loop.py")  # a file: "spawn" workers import the dataset from it
            with open(loop, "w") as f:
                f.write(LOOP)
            env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(trainctl.__file__))))
            env.pop("TRAINCTL_STATE", None)
            p = subprocess.Popen([python, loop, order, context, os.path.join(d, "state")], env=env, text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
            try:
                first = p.stdout.readline()  # "ready", or the rank's last words when it failed first
                if first.strip() == "ready":
                    os.killpg(p.pid, signal.SIGTERM)  # the rank and its workers, as SLURM does
                out, _ = p.communicate(timeout=60)
                out = first + out
            finally:
                if p.poll() is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
            return p.returncode, out

    def test_workers_live_through_sigterm_and_end_with_their_rank(self):
        python = python_with_torch()
        if python is None:
            self.skipTest("no Python with torch here")
        # Forked from the rank (the default up to Python 3.13): protected by the Controller.
        # Spawned from it: by trainctl.dataloader_worker_init.
        for context in ("fork", "spawn"):
            rc, out = self.run_rank(python, "controller-first", context)
            self.assertEqual(rc, 0, context + ": " + out)
            self.assertRegex(out, r"saved at step \d+: signal", context)
        rc, out = self.run_rank(python, "workers-first", "fork")
        self.assertNotEqual(rc, 0, "the control: unprotected workers die, and so does the rank: " + out)
        # How the dead worker shows depends on where the rank was: waiting for a batch
        # ("DataLoader worker ... exited unexpectedly"), or taking one whose shared memory
        # the worker was handing over (ConnectionResetError, seen on torch 2.6).
        self.assertRegex(out, r"DataLoader worker \(pid.*(exited unexpectedly|is killed by signal)|ConnectionResetError")
        self.assertNotIn("saved at step", out, "the control's rank saved")

    def test_notice_signals_are_read_as_the_controller_reads_them(self):
        from trainctl.workers import notice_signals
        self.assertEqual(notice_signals("USR1,TERM"), [signal.SIGUSR1, signal.SIGTERM])
        self.assertEqual(notice_signals("SIGUSR2, 15"), [signal.SIGUSR2, signal.SIGTERM])
        self.assertEqual(notice_signals("none"), [])
        self.assertEqual(notice_signals("KILL,BOGUS"), [], "SIGKILL cannot be ignored; a bad name is skipped")


if __name__ == "__main__":
    unittest.main()
