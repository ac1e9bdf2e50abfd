"""A launcher for the end-to-end tests with torchrun's process model and none of torch.

Most e2e tests are about the supervisor, the plugin, the node state and the agreement:
SLURM, process trees, signals and files. Starting torch costs about 2 CPU-s a process
(the ranks' and the agent's import), whether the process then runs for 5 s or 5 min, and
on the test machine's 2 cores that was most of the test command's time. This launcher
stands in for torchrun where torch is not the subject; the tests where it is keep the real
one (docs/contributing.md lists them, with the reason for each).

What it does as torchrun (static rendezvous, torch 1.13 to 2.x) does, toward trainctl:
- one agent process per node, which never has RANK in its environment and never uses
  trainctl: the supervisor finds the ranks below it, as it does below torchrun's agent;
- it starts --nproc_per_node rank processes, `python3 SCRIPT ARGS...`, as its children
  (same process group), with RANK, LOCAL_RANK, GROUP_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE,
  MASTER_ADDR, MASTER_PORT and TORCHELASTIC_RESTART_COUNT set; the signals it was started
  with ignored stay ignored in them (the supervisor's shield);
- SIGTERM, SIGINT, SIGHUP or SIGQUIT to the agent: it sends the same signal to each rank,
  waits up to 30 s for them, kills what is left, and exits 1 (torchrun's SignalException);
- when a rank fails, it ends the node's other ranks the same way (SIGTERM, 30 s, SIGKILL)
  and either restarts them all (--max_restarts) or exits 1; when all exit 0, it exits 0.
- the agent of node 0 serves the ranks' agreement at MASTER_PORT, as torchrun's agent
  hosts the store there: an element-wise MAX over every rank (light_rank.py is the
  client). A rank that dies closes its connection; the server then closes every other
  rank's, which fail in their next agreement, as gloo's "connection closed by peer".

    light_launcher.py --nnodes=2 --nproc_per_node=2 --rdzv_backend=static \
        --master_addr=127.0.0.1 --master_port=PORT --node_rank=$SLURM_NODEID SCRIPT ARGS...
    light_launcher.py --nnodes=2 --nproc_per_node=2 --rdzv_backend=c10d \
        --rdzv_endpoint=HOST:PORT --rdzv_id=$SLURM_JOB_ID SCRIPT ARGS...

Rank processes run light_rank.py, which hands the script's main() the agreement
(slurm_templates/train_example.py's `main(group=...)`).
"""

import argparse
import os
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
STOP_WAIT = 30.0  # torchrun's PContext.close(timeout=30)


class Terminated(Exception):
    def __init__(self, sig):
        super().__init__("light_launcher: process %d got signal: %d" % (os.getpid(), sig))
        self.sig = sig


def parse_args(argv):
    p = argparse.ArgumentParser(prog="light_launcher", description=__doc__.splitlines()[0])
    for name, kind, default in (("nnodes", int, 1), ("nproc_per_node", int, 1), ("node_rank", int, 0),
                                ("master_port", int, 29500), ("max_restarts", int, 0)):
        p.add_argument("--" + name, "--" + name.replace("_", "-"), type=kind, default=default)
    # How often the agent looks at its ranks (and reaps a dead one): 5 s, as the host's
    # torchrun (torch 1.13) that test_light_launcher compares against. torch 2.x's 0.1 s
    # reaps a dead rank before its supervisor has read how it died, in 1 run of 10 of
    # test_crash_culprit ("unknown cause"): the tests that judge a death were made with 5 s.
    p.add_argument("--monitor_interval", "--monitor-interval", type=float, default=5.0)
    p.add_argument("--master_addr", "--master-addr", default="127.0.0.1")
    # c10d as users write it for a cluster (docs/torchrun.md): the endpoint is node 0's
    # store, and each node's rank its SLURM_NODEID (torchrun's c10d hands ranks out in
    # order of arrival; the tests need only a valid one).
    p.add_argument("--rdzv_backend", "--rdzv-backend", default="static", choices=("static", "c10d"))
    p.add_argument("--rdzv_endpoint", "--rdzv-endpoint", default="")
    p.add_argument("--rdzv_id", "--rdzv-id", default="")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.rdzv_backend == "c10d":
        host, _, port = args.rdzv_endpoint.rpartition(":")
        if not host or not port.isdigit():
            p.error("--rdzv_endpoint=HOST:PORT is needed with --rdzv_backend=c10d")
        args.master_addr, args.master_port = socket.gethostbyname(host), int(port)
        args.node_rank = int(os.environ.get("SLURM_NODEID", "0"))
    return args


# -- the agreement server (node 0's agent) ---------------------------------------------
class MaxServer:
    """Every rank sends one line of integers per round; each gets back the element-wise
    MAX once all WORLD have sent theirs. 'bye' leaves cleanly; any other end of a
    connection ends every connection (a peer died). Then it waits for the next world of
    ranks: the ones the agents start again (--max_restarts)."""

    def __init__(self, addr, port, world):
        self.world = world
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # MASTER_ADDR only (the tests' 127.0.0.1), where torchrun's store listens on every
        # address: a test's server stays on loopback.
        self.listener.bind((addr, port))
        self.listener.listen(world)
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            self.serve_one_world()
            time.sleep(0.05)  # bounded, should accept() itself fail

    def serve_one_world(self):
        conns = {}
        try:
            while len(conns) < self.world:
                c, _ = self.listener.accept()
                f = c.makefile("rwb", buffering=0)
                hello = f.readline().split()
                if len(hello) != 2 or int(hello[1]) != self.world:
                    c.close()
                    continue
                conns[int(hello[0])] = (c, f)
            for _, f in conns.values():
                f.write(b"ok\n")
            while conns:
                lines = {r: f.readline() for r, (_, f) in conns.items()}
                if any(not line for line in lines.values()):
                    break  # a rank died (or closed without 'bye'): the others fail too
                if all(line.strip() == b"bye" for line in lines.values()):
                    break
                if any(line.strip() == b"bye" for line in lines.values()):
                    # Some left while others agree on: those have no peers any more.
                    for r, line in lines.items():
                        if line.strip() != b"bye":
                            conns[r][1].write(b"error peers gone\n")
                    break
                rows = [[int(v) for v in line.split()] for line in lines.values()]
                if len({len(r) for r in rows}) != 1:
                    break
                out = (" ".join(str(max(col)) for col in zip(*rows)) + "\n").encode()
                for _, f in conns.values():
                    f.write(out)
        except (OSError, ValueError):
            pass
        finally:
            for c, _ in conns.values():
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()


# -- the agent ---------------------------------------------------------------------------
def start_ranks(args, restart):
    world = args.nnodes * args.nproc_per_node
    procs = []
    for local in range(args.nproc_per_node):
        env = dict(os.environ)
        env.update(RANK=str(args.node_rank * args.nproc_per_node + local), LOCAL_RANK=str(local),
                   GROUP_RANK=str(args.node_rank), ROLE_RANK=str(args.node_rank * args.nproc_per_node + local),
                   WORLD_SIZE=str(world), LOCAL_WORLD_SIZE=str(args.nproc_per_node),
                   GROUP_WORLD_SIZE=str(args.nnodes), MASTER_ADDR=args.master_addr,
                   MASTER_PORT=str(args.master_port), TORCHELASTIC_RESTART_COUNT=str(restart),
                   TORCHELASTIC_MAX_RESTARTS=str(args.max_restarts))
        env.setdefault("OMP_NUM_THREADS", "1")
        procs.append(subprocess.Popen([sys.executable, os.path.join(HERE, "light_rank.py"), args.script] + args.args,
                                      env=env))
    return procs


def stop_ranks(procs, sig):
    for p in procs:
        if p.poll() is None:
            try:
                p.send_signal(sig)
            except OSError:
                pass
    end = time.monotonic() + STOP_WAIT
    for p in procs:
        try:
            p.wait(max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()


def on_signal(sig, _frame):
    raise Terminated(sig)


def main(argv):
    args = parse_args(argv)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(s, on_signal)
    if args.node_rank == 0:
        MaxServer(args.master_addr, args.master_port, args.nnodes * args.nproc_per_node)
    restart = 0
    procs = []
    try:
        while True:
            procs = start_ranks(args, restart)
            while True:
                codes = [p.poll() for p in procs]
                failed = [(i, c) for i, c in enumerate(codes) if c not in (None, 0)]
                if failed:
                    break
                if all(c == 0 for c in codes):
                    return 0
                time.sleep(args.monitor_interval)
            i, code = failed[0]
            print("light_launcher: local rank %d (pid %d) failed with %s" % (
                i, procs[i].pid, "signal %d" % -code if code < 0 else "exit status %d" % code),
                file=sys.stderr, flush=True)
            stop_ranks(procs, signal.SIGTERM)
            if restart >= args.max_restarts:
                return 1
            restart += 1
            print("light_launcher: restarting the node's ranks (%d of %d)" % (restart, args.max_restarts),
                  file=sys.stderr, flush=True)
    except Terminated as e:
        print(str(e), file=sys.stderr, flush=True)
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
            signal.signal(s, signal.SIG_DFL if s != e.sig else signal.SIG_IGN)
        stop_ranks(procs, e.sig)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
