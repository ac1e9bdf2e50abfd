"""Python poll cost: ctl.should_exit() against os.path.exists(switch), per call.

    PYTHONPATH=build/lib/python3/dist-packages python3 tests/bench/bench_poll.py
"""

import os
import statistics
import tempfile
import timeit

import trainctl


def per_call(stmt, number=200000, repeat=7, **ns):
    times = timeit.repeat(stmt, globals=ns, number=number, repeat=repeat)
    return statistics.median(times) / number


def main():
    d = tempfile.mkdtemp(prefix="trainctl-bench-")
    kill = os.path.join(d, "KILL")
    ctl = trainctl.Controller(kill_switch=kill, state_path=os.path.join(d, "state"), signals="none")
    poll = per_call("ctl.should_exit()", ctl=ctl)
    check = per_call("ctl.check(1)", number=50000, ctl=ctl)
    exists = per_call("exists(kill)", exists=os.path.exists, kill=kill)
    ctl.close()
    os.rmdir(d)
    print("python: ctl.should_exit()      %8.0f ns/call" % (poll * 1e9))
    print("python: ctl.check(step) 1 proc %8.0f ns/call" % (check * 1e9))
    print("python: os.path.exists(switch) %8.0f ns/call (local disk; NFS/Lustre: a network round trip)"
          % (exists * 1e9))
    print("python: should_exit is %.1fx cheaper than os.path.exists" % (exists / poll))


if __name__ == "__main__":
    main()
