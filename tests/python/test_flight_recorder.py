"""trainctl.flight_recorder: the digest of torch's dump (entries as torch 2.14 writes
them for gloo, with their stacks), and the listener's answer to a request through its
FIFO. The real recorder runs in tests/e2e/test_flight_recorder.sh (sid's torch)."""

import os
import pickle
import tempfile
import time
import sys
import types
import unittest
from unittest import mock

import trainctl.flight_recorder as fr


def entry(seq, op="all_reduce", retired=True, pg=0, sizes=((4096,),), dtypes=("Float",), where="/home/u/train.py"):
    frames = [{"filename": "/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py", "line": 3906,
               "name": "all_reduce"},
              {"filename": os.path.join(os.path.dirname(fr.__file__), "collectives.py"), "line": 60, "name": "timed"},
              {"filename": where, "line": 88, "name": "train_step"}]
    return {"pg_id": pg, "collective_seq_id": seq, "profiling_name": "gloo:" + op, "input_sizes": [list(s) for s in sizes],
            "input_dtypes": list(dtypes), "retired": retired, "is_p2p": False, "frames": frames}


class DigestTest(unittest.TestCase):
    def test_the_newest_collective_of_each_group_with_the_programs_line(self):
        lines = fr.digest_lines([entry(3), entry(4, retired=False), entry(2, "all_gather", pg=1, sizes=((2, 4),),
                                                                             dtypes=("Long",))])
        self.assertEqual(lines, ["pg=0 seq=4 done=0 op=all_reduce at=train.py:88 in=float32 x 4,096",
                                 "pg=1 seq=2 done=1 op=all_gather at=train.py:88 in=int64 x 8"])

    def test_point_to_point_and_odd_names_do_not_break_a_line(self):
        p2p = dict(entry(9), is_p2p=True)
        odd = entry(5, op="all reduce\n", where="/tmp/my train.py")
        self.assertEqual(fr.digest_lines([p2p, odd]), ["pg=0 seq=5 done=1 op=all_reduce_ at=my_train.py:88 "
                                                       "in=float32 x 4,096"])


class GroupTableTest(unittest.TestCase):
    def test_a_nameless_group_row_gets_the_name_its_entries_give(self):
        group = object()
        c10d = types.SimpleNamespace(_world=types.SimpleNamespace(pg_names={group: "0"}))
        dist = types.SimpleNamespace(distributed_c10d=c10d, get_process_group_ranks=lambda g: [0, 1, 2, 3])
        trace = {"pg_config": {"": {"name": "", "desc": "", "ranks": "[0, 1, 2, 3]"}},
                 "entries": [dict(entry(1), process_group=("0", "default_pg"))]}
        self.assertTrue(fr._name_groups(trace, dist))
        self.assertEqual(trace["pg_config"], {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1, 2, 3]"}})
        self.assertFalse(fr._name_groups(trace, dist))  # named already: left as it is


class ListenerTest(unittest.TestCase):
    def test_a_request_on_the_pipe_is_answered_with_the_dump_and_its_digest(self):
        raw = pickle.dumps({"entries": [entry(7, retired=False)]})
        c10d = types.SimpleNamespace(_dump_fr_trace=lambda *a: raw)
        torch = types.SimpleNamespace(__version__="2.14", _C=types.SimpleNamespace(_distributed_c10d=c10d))
        dist = types.SimpleNamespace(get_backend=lambda: "gloo")
        with tempfile.TemporaryDirectory() as d, mock.patch.dict(sys.modules, {"torch": torch}):
            fr._STARTED = False
            fr.start(os.path.join(d, "state"), dist)
            stem = os.path.join(d, "fr.%d" % os.getpid())
            self.assertTrue(os.path.exists(stem + ".pipe"))
            fd = os.open(stem + ".pipe", os.O_WRONLY)  # waits for the listener (the supervisor never does)
            os.write(fd, b"1\n")
            os.close(fd)
            for _ in range(500):
                if os.path.exists(stem + ".txt"):
                    break
                time.sleep(0.01)
            with open(stem + ".txt") as f:
                self.assertEqual(f.read(), "pg=0 seq=7 done=0 op=all_reduce at=train.py:88 in=float32 x 4,096\n")
            with open(stem + ".pkl", "rb") as f:
                self.assertEqual(f.read(), raw)
            fr._remove(d)


if __name__ == "__main__":
    unittest.main()
