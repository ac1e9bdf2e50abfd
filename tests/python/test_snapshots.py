"""trainctl.snapshots: a snapshot written out by the supervisor read back, and what is
refused (another kind of file, a FIFO a teammate planted: never waited on). The whole
path, from ctl.snapshot to resume, runs in tests/e2e/test_snapshots.sh."""

import os
import pickle
import tempfile
import unittest

import trainctl
from trainctl import snapshots


class LoadSnapshot(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.snap = os.path.join(self.dir, "snapshot-235")
        os.mkdir(self.snap)

    def test_this_ranks_state_reads_back(self):
        buf = snapshots.to_bytes({"step": 235, "weights": b"\0" * 16})
        with open(os.path.join(self.snap, "rank-3.snapshot"), "wb") as f:
            f.write(buf.getvalue())
        state = trainctl.load_snapshot(self.snap, rank=3)
        self.assertEqual(state, {"step": 235, "weights": b"\0" * 16})

    def test_is_snapshot_needs_this_ranks_file_in_a_snapshot_directory(self):
        self.assertFalse(trainctl.is_snapshot(None))
        self.assertFalse(trainctl.is_snapshot(os.path.join(self.dir, "step_00000200")))
        os.environ["RANK"] = "1"
        try:
            self.assertFalse(trainctl.is_snapshot(self.snap))
            with open(os.path.join(self.snap, "rank-1.snapshot"), "wb") as f:
                f.write(snapshots.to_bytes(1).getvalue())
            self.assertTrue(trainctl.is_snapshot(self.snap))
        finally:
            del os.environ["RANK"]

    def test_another_kind_of_file_is_refused(self):
        with open(os.path.join(self.snap, "rank-0.snapshot"), "wb") as f:
            f.write(pickle.dumps({"step": 1}))  # no snapshot header of trainctl's
        with self.assertRaises(ValueError):
            trainctl.load_snapshot(self.snap, rank=0)

    def test_a_fifo_in_its_place_is_refused_without_waiting(self):
        os.mkfifo(os.path.join(self.snap, "rank-0.snapshot"), 0o666)
        with self.assertRaises(ValueError):
            trainctl.load_snapshot(self.snap, rank=0)


if __name__ == "__main__":
    unittest.main()
