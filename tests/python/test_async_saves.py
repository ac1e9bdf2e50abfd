"""Asynchronous saves through the Python package, without torch: a thread pool writes
the checkpoint after the loop hands it off, as DCP's async_save does (the sid root's e2e
tests run the real one). A save is committed when its write ends well, never before."""

import concurrent.futures
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

import trainctl


class _Lines(logging.Handler):
    """The library's lines, through the logger "trainctl"."""

    def __init__(self):
        super().__init__()
        self.lines = []
        self.logger = logging.getLogger("trainctl")
        self.level = self.logger.level
        self.logger.setLevel(logging.INFO)
        self.logger.addHandler(self)

    def emit(self, record):
        self.lines.append(record.getMessage())

    def close(self):
        self.logger.removeHandler(self)
        self.logger.setLevel(self.level)
        super().close()

    def text(self):
        return "\n".join(self.lines)


class _TorchLikeFuture:
    """What a torch.futures.Future offers: add_done_callback and value(), no exception()."""

    def __init__(self, error=None):
        self._error = error

    def add_done_callback(self, fn):
        fn(self)

    def value(self):
        if self._error:
            raise self._error
        return None


class _AsyncSaveResponse:
    """DCP's AsyncSaveResponse (torch 2.9+): the staging's end, and the upload's."""

    def __init__(self, staging, upload):
        self.staging_completion, self.upload_completion = staging, upload


class AsyncSaveTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="trainctl-async-")
        self.ckpt = os.path.join(self.dir, "ckpt")
        self.env = mock.patch.dict(os.environ, {"WORLD_SIZE": "1", "RANK": "0"})
        self.env.start()
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self.lines = _Lines()

    def tearDown(self):
        self.pool.shutdown(wait=True)
        self.lines.close()
        self.env.stop()
        shutil.rmtree(self.dir)

    def make(self):
        return trainctl.Controller(state_path=os.path.join(self.dir, "state"), signals="none",
                                   poll_interval="100ms")

    def write_later(self, path, gate, fail=None):
        """The writer thread's work: the checkpoint's file once `gate` is set."""
        def write():
            gate.wait(10)
            if fail:
                raise fail
            os.makedirs(path, exist_ok=True)
            with open(os.path.join(path, "model.pt"), "w") as f:
                f.write("weights")
        return self.pool.submit(write)

    def test_resume_path_never_returns_a_save_whose_write_is_in_flight(self):
        with self.make() as ctl:
            path = os.path.join(self.ckpt, "step_00000100")
            gate = threading.Event()
            future = self.write_later(path, gate)
            self.assertFalse(ctl.saved(100, path, future), "not committed at the hand-off")
            for _ in range(20):  # polled while the write is in flight
                self.assertIsNone(trainctl.resume_path(self.ckpt))
                time.sleep(0.01)
            gate.set()
            self.assertEqual(ctl.wait_for_saves(10), 0)  # the future's callbacks run after result() returns
            self.assertEqual(trainctl.resume_path(self.ckpt), path)
            self.assertIn("the save at step 100 is written and committed", self.lines.text())

    def test_saving_with_a_pending_write_commits_when_it_ends(self):
        with self.make() as ctl:
            path = os.path.join(self.ckpt, "step_00000010")
            gate = threading.Event()
            with ctl.saving(10, path) as save:
                save.pending = self.write_later(path, gate)
            self.assertIsNone(trainctl.resume_path(self.ckpt), "the block ended, the write did not")
            ctl.phase_begin("eval")  # the save phase ended with the block
            ctl.phase_end()
            gate.set()
            self.assertEqual(ctl.wait_for_saves(10), 0)
            self.assertEqual(trainctl.resume_path(self.ckpt), path)

    def test_a_write_that_fails_commits_nothing_and_says_one_line(self):
        with self.make() as ctl:
            first = os.path.join(self.ckpt, "step_00000010")
            os.makedirs(first)
            self.assertTrue(ctl.saved(10, first))
            second = os.path.join(self.ckpt, "step_00000020")
            gate = threading.Event()
            gate.set()
            future = self.write_later(second, gate, fail=OSError(28, "No space left on device"))
            ctl.saved(20, second, future)
            self.assertEqual(ctl.wait_for_saves(10), 0)
            self.assertEqual(trainctl.resume_path(self.ckpt), first)
            failed = [line for line in self.lines.lines if "the save at step 20" in line]
            self.assertEqual(len(failed), 1, self.lines.text())
            self.assertIn("failed", failed[0])
            self.assertIn("OSError: [Errno 28] No space left on device; nothing is committed", failed[0])

    def test_torch_futures_and_dcps_response_are_accepted_anything_else_is_a_type_error(self):
        with self.make() as ctl:
            path = os.path.join(self.ckpt, "step_00000001")
            os.makedirs(path)
            ctl.saved(1, path, _TorchLikeFuture())
            self.assertEqual(trainctl.resume_path(self.ckpt), path)
            bad = os.path.join(self.ckpt, "step_00000002")
            os.makedirs(bad)
            ctl.saved(2, bad, _TorchLikeFuture(RuntimeError("upload failed")))
            self.assertIn("RuntimeError: upload failed; nothing is committed", self.lines.text())
            done = concurrent.futures.Future()
            never = concurrent.futures.Future()  # the staging: its end is not the write's
            later = os.path.join(self.ckpt, "step_00000003")
            os.makedirs(later)
            ctl.saved(3, later, _AsyncSaveResponse(never, done))
            self.assertEqual(trainctl.resume_path(self.ckpt), path)
            done.set_result(None)
            self.assertEqual(trainctl.resume_path(self.ckpt), later)
            with self.assertRaisesRegex(TypeError, "pending is a str; accepted: a concurrent.futures.Future"):
                ctl.saved(4, later, "soon")
            self.assertEqual(ctl.wait_for_saves(1), 0)

    def test_close_waits_for_the_pending_write(self):
        ctl = self.make()
        path = os.path.join(self.ckpt, "step_00000005")
        gate = threading.Event()
        ctl.saved(5, path, self.write_later(path, gate))
        threading.Timer(0.3, gate.set).start()
        ctl.close()
        self.assertEqual(trainctl.resume_path(self.ckpt), path, "committed before close() returned")
        self.assertIn("every one ended", self.lines.text())

    def test_a_squatted_marker_name_keeps_the_loop_training(self):
        with self.make() as ctl:
            path = os.path.join(self.ckpt, "step_00000007")
            os.makedirs(os.path.join(path, ".trainctl-committed.0"))  # a teammate's directory in its place
            self.assertFalse(ctl.saved(7, path))
            with ctl.saving(7, path):
                pass
            self.assertIn("is written but not committed", self.lines.text())
            self.assertFalse(ctl.check(8).exit, "the loop trains on")
            self.assertIsNone(trainctl.resume_path(self.ckpt))

    def test_a_loop_that_exits_right_after_handing_off_still_commits(self):
        # The loop saves asynchronously at its exit and ends at once, without close():
        # the interpreter's end waits for the write (the library's wait runs before Python
        # joins the writer's thread), and the save is committed.
        code = (
            "import concurrent.futures, os, sys, time, trainctl\n"
            "ckpt, state = sys.argv[1], sys.argv[2]\n"
            "ctl = trainctl.Controller(state_path=state, signals='none')\n"
            "pool = concurrent.futures.ThreadPoolExecutor(1)\n"
            "path = os.path.join(ckpt, 'step_00000009')\n"
            "def write():\n"
            "    time.sleep(0.5)\n"
            "    os.makedirs(path)\n"
            "ctl.saved(9, path, pool.submit(write))\n"
            "sys.exit(0)\n")
        out = subprocess.run([sys.executable, "-c", code, self.ckpt, os.path.join(self.dir, "state-exit")],
                             env=dict(os.environ, WORLD_SIZE="1", RANK="0"), capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(trainctl.resume_path(self.ckpt), os.path.join(self.ckpt, "step_00000009"), out.stderr)
        self.assertIn("waiting for this rank's writes: 1 pending, the save at step 9", out.stderr)
        self.assertIn("every one ended", out.stderr)

    def test_a_rank_dying_of_an_uncaught_exception_does_not_wait_for_its_write(self):
        # A crash costs seconds: the rank's stuck write is said, not waited for.
        code = (
            "import concurrent.futures, os, sys, threading, trainctl\n"
            "ckpt, state = sys.argv[1], sys.argv[2]\n"
            "ctl = trainctl.Controller(state_path=state, signals='none')\n"
            "pool = concurrent.futures.ThreadPoolExecutor(1)\n"
            "stuck = threading.Event()\n"
            "ctl.saved(9, os.path.join(ckpt, 'step_9'), pool.submit(stuck.wait, 120))\n"
            "threading.Timer(1.0, stuck.set).start()  # lets the interpreter's own join end\n"
            "raise RuntimeError('a bug in the training program')\n")
        began = time.monotonic()
        out = subprocess.run([sys.executable, "-c", code, self.ckpt, os.path.join(self.dir, "state-crash")],
                             env=dict(os.environ, WORLD_SIZE="1", RANK="0"), capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertLess(time.monotonic() - began, 30)
        self.assertIn("RuntimeError: a bug in the training program", out.stderr)
        self.assertNotIn("waiting for this rank's writes", out.stderr)
        self.assertIsNone(trainctl.resume_path(self.ckpt))


if __name__ == "__main__":
    unittest.main()
