"""A rank under light_launcher.py: runs SCRIPT's main(group=...) with the agreement of the
launcher's ranks instead of torch.distributed.

    light_rank.py SCRIPT ARGS...   (RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set)

The group is what slurm_templates/train_example.py asks of one: rank, world, join() (where
a loop would call init_process_group), allreduce(values) (the element-wise MAX that
trainctl's check() agrees through), barrier() and close(). A script without
main(group=...) runs as `python3 SCRIPT ARGS`, its ranks unaware of each other.
"""

import importlib.util
import inspect
import os
import runpy
import socket
import sys
import time

JOIN_TIMEOUT = 1800.0  # torch's default process-group timeout: a rank that never joins hangs the others


class TcpGroup:
    def __init__(self):
        self.rank = int(os.environ["RANK"])
        self.world = int(os.environ["WORLD_SIZE"])
        self.addr = (os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ["MASTER_PORT"]))
        self.f = None

    def join(self):
        """Connects to node 0's agent and waits there for every rank, as init_process_group."""
        end = time.monotonic() + JOIN_TIMEOUT
        while True:
            try:
                s = socket.create_connection(self.addr, timeout=5)
                break
            except OSError:
                if time.monotonic() > end:
                    raise
                time.sleep(0.1)
        s.settimeout(None)
        self.f = s.makefile("rwb", buffering=0)
        self.f.write(b"%d %d\n" % (self.rank, self.world))
        self.wait_for_peers()

    def wait_for_peers(self):
        if self.f.readline().strip() != b"ok":
            raise ConnectionError("light_rank: the launcher's agreement refused rank %d" % self.rank)

    def allreduce(self, values):
        """The element-wise MAX of VALUES over every rank."""
        if self.f is None:
            self.join()
        self.f.write((" ".join(str(int(v)) for v in values) + "\n").encode())
        line = self.f.readline()
        if not line or line.startswith(b"error"):
            raise ConnectionError("light_rank: rank %d: connection closed by peer (%s)" % (
                self.rank, line.decode().strip() or "a rank died"))
        return [int(v) for v in line.split()]

    def barrier(self):
        self.allreduce([0])

    def close(self):
        if self.f is not None:
            try:
                self.f.write(b"bye\n")
            except OSError:
                pass
            self.f.close()
            self.f = None


def main():
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    spec = importlib.util.spec_from_file_location("__light_main__", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    run = getattr(module, "main", None)
    if run is None or "group" not in inspect.signature(run).parameters:
        runpy.run_path(script, run_name="__main__")
        return 0
    return run(group=TcpGroup() if int(os.environ.get("WORLD_SIZE", "1")) > 1 else None)


if __name__ == "__main__":
    sys.exit(main())
