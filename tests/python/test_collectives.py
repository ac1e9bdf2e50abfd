"""trainctl.watch_collectives on a stand-in for torch.distributed (the real one runs in
tests/e2e/test_stragglers_collectives.sh): the time inside collectives and their waits is
not compute; everything else is."""

import sys
import time
import types
import unittest

import trainctl.collectives as collectives


class FakeController:
    def __init__(self):
        self.marks = []

    def compute_begin(self):
        self.marks.append(("begin", time.monotonic()))

    def compute_end(self):
        self.marks.append(("end", time.monotonic()))

    def compute_time(self, until):
        total, opened = 0.0, None
        for what, t in self.marks:
            if what == "begin":
                opened = t
            elif opened is not None:
                total, opened = total + t - opened, None
        return total + (until - opened if opened is not None else 0.0)


class Work:
    def wait(self):
        time.sleep(0.2)  # the other ranks
        return True


class WatchCollectivesTest(unittest.TestCase):
    def setUp(self):
        dist = types.ModuleType("torch.distributed")
        c10d = types.ModuleType("torch.distributed.distributed_c10d")

        def all_reduce(t, async_op=False):
            if async_op:
                return Work()
            time.sleep(0.2)  # waiting for the slowest rank

        c10d.all_reduce = dist.all_reduce = all_reduce
        c10d.Work = Work
        dist.distributed_c10d = c10d
        torch = types.ModuleType("torch")
        torch.distributed = dist
        self.saved = {k: sys.modules.get(k) for k in ("torch", "torch.distributed", "torch.distributed.distributed_c10d")}
        sys.modules.update({"torch": torch, "torch.distributed": dist, "torch.distributed.distributed_c10d": c10d})
        self.dist = dist
        self.orig_wait = Work.wait

    def tearDown(self):
        Work.wait = self.orig_wait
        collectives._target[0] = None
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v

    def test_time_in_collectives_and_waits_is_not_compute(self):
        ctl = FakeController()
        collectives.watch_collectives(ctl)
        start = time.monotonic()
        time.sleep(0.1)  # own work
        self.dist.all_reduce(None)
        time.sleep(0.1)
        self.dist.all_reduce(None, async_op=True).wait()
        compute = ctl.compute_time(time.monotonic())
        self.assertGreater(time.monotonic() - start, 0.6)
        self.assertAlmostEqual(compute, 0.2, delta=0.08)
        self.assertTrue(hasattr(self.dist.all_reduce, "__wrapped__"), "the original stays reachable")

    def test_watching_twice_wraps_once_and_a_closed_controller_stops_the_marks(self):
        first, second = FakeController(), FakeController()
        collectives.watch_collectives(first)
        collectives.watch_collectives(second)
        self.assertFalse(hasattr(self.dist.all_reduce.__wrapped__, "__wrapped__"), "wrapped once")
        self.dist.all_reduce(None)
        self.assertEqual(len(first.marks), 1, "the marks moved to the second Controller")

        class Closed:
            def compute_begin(self):
                raise ValueError("closed")
            compute_end = compute_begin

        collectives._target[0] = Closed()
        self.dist.all_reduce(None)  # the collective still runs
        self.assertIsNone(collectives._target[0])


if __name__ == "__main__":
    unittest.main()
