#!/usr/bin/env python3
"""A minimal training loop that uses trainctl: copy it and put your model in.

Runs under torchrun (torch.distributed on gloo, or nccl when CUDA is there), under MPI
with --mpi (mpi4py; `srun --mpi=pmix` or `mpirun`), or alone without torch; torch is
imported only where it is used (several ranks without --mpi, --ddp, --allreduce).
It resumes from the newest checkpoint every rank committed (trainctl.resume_path), saves
when trainctl says so, and exits cleanly (status 0) when trainctl asks for an exit, saying why.

    python3 train_example.py --ckpt-dir ckpt --steps 1000
    srun --mpi=pmix -n 4 python3 train_example.py --mpi --ckpt-dir ckpt
"""

import argparse
import concurrent.futures
import fnmatch
import json
import os
import shutil
import stat
import sys
import tempfile
import time

import trainctl

torch = dist = None  # imported by use_torch() where the loop uses it: its start costs seconds


def use_torch():
    """Imports torch; False where it is not installed (the loop then runs as one process)."""
    global torch, dist
    if torch is None:
        try:
            import torch as torch_module
            import torch.distributed as dist_module
        except ImportError:
            return False
        torch, dist = torch_module, dist_module
    return True


# -- files in a directory others may write (a team's group-writable project directory) --
# Made the way trainctl makes its own, so that this loop is safe to copy: never through a
# link a teammate planted under the name (O_NOFOLLOW: it could point at your .bashrc),
# never blocking on a FIFO planted there (O_NONBLOCK), only into a regular file of yours,
# and never truncated before that is known. A checkpoint is written in a directory only
# you could have made (mkdtemp), then renamed into place whole.
def open_own(path, append=False):
    """PATH for writing (appending), made if missing; OSError if it is a link, a FIFO or
    anything but a regular file of this user's."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    fd = os.open(path, flags | (os.O_APPEND if append else 0), 0o644)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
        os.close(fd)
        raise OSError("%s is not a regular file of yours; not written" % path)
    if not append:
        os.ftruncate(fd, 0)
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a" if append else "w", buffering=1 if append else -1)


def step_list(text):
    """--crash-at's value: steps separated by commas."""
    try:
        steps = [int(x) for x in text.split(",")]
    except ValueError:
        steps = []
    if not steps or min(steps) < 0:
        raise argparse.ArgumentTypeError("'%s': accepted: a step or steps separated by commas, e.g. 18,33,29" % text)
    return steps


def rank_and_save(text):
    """--fail-save's value: RANK:N."""
    rank, _, n = text.partition(":")
    if not (rank.isdigit() and n.isdigit() and int(n) > 0):
        raise argparse.ArgumentTypeError("'%s': accepted: RANK:N, a rank and the save of this run that fails (1 "
                                         "for the first), e.g. 3:2" % text)
    return int(rank), int(n)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ckpt-dir", required=True, help="checkpoints go to DIR/step_NNNNNNNN/")
    # The default runs about 14 hours at the default step time: far past any time limit,
    # so the first run shows trainctl's deadline exit and the array resuming.
    p.add_argument("--steps", type=int, default=1000000, help="train until this many steps are done")
    p.add_argument("--step-time", type=float, default=0.05, help="seconds one fake step takes")
    p.add_argument("--save-time", type=float, default=0, help="seconds one fake save takes (a large model's "
                   "checkpoint: --graceful-exit=auto learns it); with --async-save, the write's, in the background")
    p.add_argument("--async-save", action="store_true",
                   help="save in the background while training goes on: torch.distributed.checkpoint.async_save "
                   "where torch has it (2.3+) and several ranks run, else a writer thread; each rank's part is "
                   "committed when its write ends, and an exit waits for it")
    p.add_argument("--state-mb", type=float, default=1, metavar="MB",
                   help="the size of the fake model state each rank saves with --async-save over DCP, and "
                   "keeps in each snapshot (--snapshot-every)")
    p.add_argument("--save-every", type=int, default=0, metavar="STEPS",
                   help="also save every STEPS steps, as most loops do (0: only when trainctl says so)")
    p.add_argument("--snapshot-every", type=int, default=0, metavar="STEPS",
                   help="keep a snapshot of the state in host memory every STEPS steps (ctl.snapshot): when a "
                   "rank dies, the supervisor writes the newest out as a save, so the next task resumes there "
                   "instead of at the last save (0: off)")
    p.add_argument("--restore-time", type=float, default=0,
                   help="seconds one fake checkpoint load takes, when there is one to resume from")
    p.add_argument("--eval-every", type=int, default=0, metavar="STEPS",
                   help="evaluate every STEPS steps (0: never); marked as trainctl's phase 'eval', so a long "
                   "evaluation is no hang")
    p.add_argument("--eval-time", type=float, default=0, help="seconds one fake evaluation takes")
    p.add_argument("--mpi", action="store_true", help="agree through MPI (mpi4py) instead of torch.distributed")
    p.add_argument("--events", help="append one JSON line per event of this rank to this file "
                   "({rank} is replaced by the rank)")
    faults = p.add_argument_group("faults, to try trainctl's diagnosis (stragglers, hangs)")
    faults.add_argument("--slow-rank", type=int, default=-1, help="this rank's steps take --slow-factor times longer")
    faults.add_argument("--slow-factor", type=float, default=3.0)
    faults.add_argument("--hang-rank", type=int, default=-1, help="this rank stops making progress at --hang-at")
    faults.add_argument("--hang-at", type=int, default=50, help="the step at which --hang-rank hangs")
    faults.add_argument("--hang-for", type=float, default=0, metavar="SECONDS",
                        help="with --hang-in python: stall this long, then go on (default: forever)")
    faults.add_argument("--hang-in", choices=("python", "c", "all_gather"), default="python",
                        help="hang in a Python loop, inside a C call (a mutex locked twice), or in an all_gather "
                        "where the other ranks all_reduce the gradients (a collective mismatch; with --allreduce)")
    faults.add_argument("--crash-on", metavar="NODE", help="ranks on this node (a name or a glob: '*' for every "
                        "node) crash at --crash-at, as on a node with a broken GPU")
    faults.add_argument("--crash-rank", type=int, default=-1, metavar="RANK",
                        help="with --crash-on: only this rank crashes (-1: every rank on the node)")
    faults.add_argument("--crash-at", type=step_list, default=[50], metavar="STEP[,STEP...]",
                        help="the step; with several, task N of an array takes the Nth (cycling), as a node "
                        "failing at random times would")
    faults.add_argument("--crash-after", type=int, default=0, metavar="STEPS",
                        help="crash this many steps after the step the run resumed at, instead of at --crash-at")
    faults.add_argument("--crash-how", choices=("abort", "segv", "exception", "sigkill", "oom"), default="abort",
                        help="abort, segv: SIGABRT or SIGSEGV, as a fault of the node would; exception: the "
                        "program raises; sigkill: SIGKILL from outside, as an admin's kill -9 would; oom: the "
                        "loop takes memory until the OOM killer ends it (the job's memory limit)")
    faults.add_argument("--stuck-save", type=int, default=0, metavar="N",
                        help="the Nth save of this run and every later one never finishes, as on a stuck file "
                        "system (0: none)")
    faults.add_argument("--fail-save", type=rank_and_save, metavar="RANK:N",
                        help="rank RANK's part of the Nth save of this run fails (it raises, as on a full disk): "
                        "that save is not committed, so the next run resumes from an earlier one")
    faults.add_argument("--hang-before-init", type=int, default=-1, metavar="RANK",
                        help="this rank never joins the process group: every rank hangs in init")
    p.add_argument("--ddp", action="store_true",
                   help="a real torch DDP model (gloo): every step ends in a gradient all_reduce, and "
                        "trainctl.watch_ddp marks each rank's own compute for the straggler finding")
    p.add_argument("--allreduce", action="store_true",
                   help="every step all_reduces a gradient tensor through torch.distributed itself (as a loop "
                        "without DDP, or FSDP, does); trainctl.watch_collectives marks the time outside "
                        "collectives as each rank's own compute")
    faults.add_argument("--faulthandler", action="store_true",
                        help="faulthandler.enable() after the Controller is made, as many training scripts "
                        "do (trainctl's guard of its node state stays first)")
    faults.add_argument("--ignore-exit-rank", type=int, default=-1,
                        help="this rank keeps training when trainctl asks it to exit, as a loop that never "
                        "looks at d.exit would (the supervisor names it)")
    return p.parse_args()


def node_name():
    import socket
    return os.environ.get("SLURMD_NODENAME") or socket.gethostname()


def hang(run, step, where, seconds=0, grad=None):
    run.log("hang", step=step, where=where)
    if seconds > 0:
        time.sleep(seconds)
        return
    if where == "all_gather" and grad is not None:  # the others wait in their all_reduce
        dist.all_gather([torch.zeros_like(grad) for _ in range(run.world)], grad)
    if where == "c":  # a deadlock inside C: a mutex locked twice, as a lock-order bug would
        import ctypes
        libc, mutex = ctypes.CDLL(None), ctypes.create_string_buffer(64)  # zeroed: a default mutex
        libc.pthread_mutex_lock(mutex)
        libc.pthread_mutex_lock(mutex)
    while True:
        time.sleep(1)


class Run:
    """How the ranks agree and wait for each other: MPI with --mpi, else `group` when the
    launcher gives one (an object with rank, world, join(), allreduce(values) returning the
    element-wise MAX, barrier() and close()), else torch.distributed with several ranks."""

    def __init__(self, args, group=None):
        self.args = args
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")))
        self.comm = self.allreduce = self.group = None
        if args.ddp or args.allreduce:
            use_torch()
        if group is not None and not args.mpi:
            self.rank, self.world = group.rank, group.world
            if self.rank == args.hang_before_init:
                while True:  # never joins: the others wait for it
                    time.sleep(1)
            group.join()
            self.group, self.allreduce = group, group.allreduce
        elif args.mpi:
            from mpi4py import MPI
            self.comm = MPI.COMM_WORLD
            self.rank, self.world = self.comm.Get_rank(), self.comm.Get_size()
            self.allreduce = trainctl.mpi_allreduce(self.comm)  # what check() agrees through
        elif self.world > 1 and use_torch() and not dist.is_initialized():
            if self.rank == args.hang_before_init:
                while True:  # never reaches init_process_group: the others wait there
                    time.sleep(1)
            backend = "nccl" if torch.cuda.is_available() else "gloo"
            dist.init_process_group(backend)
            self.rank = dist.get_rank()
            if backend == "gloo" and self.rank == 0:  # said once, so that a missing GPU is no surprise
                print("train: no GPU visible (torch.cuda.is_available() is False): torch.distributed on gloo, "
                      "on the CPU", file=sys.stderr, flush=True)
        self.events = None
        self.saves = self.attempts = 0  # rank 0's saves written; this rank's saves
        # --async-save: DCP over a gloo group of its own (the write's collectives must not
        # mix with the loop's), or a writer thread where DCP cannot run.
        self.dcp_group = self.weights = self.pool = self.last_write = None
        if args.async_save and dist is not None and dist.is_initialized() and self.group is None:
            import torch.distributed.checkpoint as dcp
            if hasattr(dcp, "async_save"):
                self.dcp_group = dist.new_group(backend="gloo")
                self.weights = torch.zeros(max(1, int(args.state_mb * 262144)))  # float32: 4 bytes each
        if args.events:
            path = args.events.replace("{rank}", str(self.rank))
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self.events = open_own(path, append=True)

    def log(self, event, **fields):
        record = dict(event=event, rank=self.rank, time=round(time.time(), 3), **fields)
        if self.events:
            self.events.write(json.dumps(record) + "\n")
        if self.rank == 0:
            print("train: " + " ".join("%s=%s" % kv for kv in record.items()), flush=True)

    def barrier(self):
        if self.group is not None:
            self.group.barrier()
        elif self.comm is not None:
            self.comm.Barrier()
        elif dist is not None and dist.is_initialized():
            dist.barrier()

    def close(self):
        # Leave the process group before exiting: otherwise torch's gloo threads may abort
        # the process at exit ("terminate called without an active exception", see
        # pytorch/pytorch#190489), which turns a clean exit into a failed job.
        if self.group is not None:
            self.group.close()
        elif dist is not None and dist.is_initialized():
            dist.destroy_process_group()

    # -- asynchronous saves: the loop trains on while the write goes on -----------------
    def async_save(self, ctl, step, why):
        """Hands the save at `step` off to a write that goes on (DCP's async_save over a
        process group of its own, else a thread), and tells trainctl: this rank's part is
        committed when the write ends well. Returns at once after staging."""
        began = time.time()
        final = os.path.join(self.args.ckpt_dir, "step_%08d" % step)
        self.attempts += 1
        fails = self.args.fail_save == (self.rank, self.attempts)
        if self.last_write is not None:  # one write at a time: DCP's collectives must not interleave
            concurrent.futures.wait([self.last_write])
        with ctl.saving(step, final) as save:
            if self.dcp_group is not None:
                save.pending = self.dcp_write(step, final, fails)
            else:
                save.pending = self.writer().submit(self.thread_write, step, final, why, fails)
        blocking = round(time.time() - began, 3)
        self.log("save", step=step, why=why, took=blocking, asynchronous=True)

        def written(done):  # on the writer's thread, when the write ended
            error = done.exception()
            self.log("written", step=step, took=round(time.time() - began, 3), blocking=blocking,
                     error=str(error) if error else None)
        # DCP (torch 2.9+) returns the staging's and the upload's completion; else a future.
        self.last_write = getattr(save.pending, "upload_completion", save.pending)
        self.last_write.add_done_callback(written)

    def dcp_write(self, step, final, fails):
        import torch.distributed.checkpoint as dcp
        state = {"step": torch.tensor(step), "weights": self.weights}
        seconds, stuck = self.args.save_time, 0 < self.args.stuck_save <= self.attempts

        class Storage(dcp.FileSystemWriter):  # your file system, made as slow as --save-time says
            def write_data(self, plan, planner):
                time.sleep(seconds)
                while stuck:
                    time.sleep(1)
                if fails:
                    raise OSError("its part of the save at step %d failed (as on a full disk)" % step)
                return super().write_data(plan, planner)
        return dcp.async_save(state, storage_writer=Storage(final), process_group=self.dcp_group)

    def thread_write(self, step, final, why, fails):
        """A writer thread's save: this rank's part into the step's directory."""
        os.makedirs(final, exist_ok=True)
        time.sleep(self.args.save_time)
        while 0 < self.args.stuck_save <= self.attempts:
            time.sleep(1)
        if fails:
            raise OSError("rank %d: its part of the save at step %d failed (as on a full disk)" % (self.rank, step))
        with open_own(os.path.join(final, "rank%d.json" % self.rank)) as f:
            json.dump({"step": step, "why": why}, f)
        if self.rank == 0:
            with open_own(os.path.join(final, "state.json")) as f:
                json.dump({"step": step, "why": why}, f)   # your model.state_dict() here

    def writer(self):
        if self.pool is None:
            self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="save")
        return self.pool

    def restore(self, path):
        """The step a checkpoint holds (and its state loaded): DCP's, or state.json."""
        if os.path.exists(os.path.join(path, ".metadata")) and use_torch():
            import torch.distributed.checkpoint as dcp
            state = {"step": torch.tensor(0), "weights": self.weights if self.weights is not None else torch.zeros(0)}
            dcp.load(state, checkpoint_id=path, process_group=self.dcp_group)
            return int(state["step"])
        with open(os.path.join(path, "state.json")) as f:
            return json.load(f)["step"]  # model.load_state_dict(...) from it goes here

    # -- snapshots in host memory: the state at a step, a value derived from it checked --
    def snapshot_state(self, step):
        state = {"step": step, "rank": self.rank, "check": step * 1000 + self.rank}  # your model's state_dict()
        if torch is not None:  # a loop on torch: its tensors (--state-mb), copied to host memory
            state["weights"] = torch.full((max(1, int(self.args.state_mb * 262144)),), float(step))
        else:
            state["weights"] = bytes(int(self.args.state_mb * (1 << 20)))
        return state

    def restore_snapshot(self, path):
        """The step a snapshot holds, its state checked against the step it says."""
        state = trainctl.load_snapshot(path)
        tensor = not isinstance(state["weights"], bytes)
        if state["rank"] != self.rank or state["check"] != state["step"] * 1000 + self.rank or (
                tensor and float(state["weights"][0]) != float(state["step"])):
            raise RuntimeError("rank %d: the snapshot at %s holds another rank's or step's state" % (self.rank, path))
        return state["step"]

    # -- checkpoints: written whole under a temporary name, then renamed ---------------
    def save(self, ctl, step, why):
        began = time.time()
        final = os.path.join(self.args.ckpt_dir, "step_%08d" % step)
        if self.rank == 0:
            # SAVING exists while a save is in progress: trainwatch log-stall
            # --save-marker allows a longer silence then (cron/trainwatch.conf.example).
            marker = os.path.join(self.args.ckpt_dir, "SAVING")
            os.makedirs(self.args.ckpt_dir, exist_ok=True)
            try:
                open_own(marker).close()
            except OSError as e:  # the save goes on without its marker
                print("train: no save marker: %s" % e, file=sys.stderr, flush=True)
                marker = None
            tmp = tempfile.mkdtemp(prefix="step_%08d.tmp." % step, dir=self.args.ckpt_dir)
            self.saves += 1
            with open(os.path.join(tmp, "state.json"), "w") as f:
                json.dump({"step": step, "why": why}, f)   # your model.state_dict() here
                time.sleep(self.args.save_time)
                while 0 < self.args.stuck_save <= self.saves:
                    time.sleep(1)
            os.chmod(tmp, 0o755)  # mkdtemp's is 0700: readable as your other files are
            if os.path.lexists(final):  # this step saved before, and not by every rank: replaced whole
                aside = tempfile.mkdtemp(prefix=".replaced.", dir=self.args.ckpt_dir)
                os.rename(final, os.path.join(aside, "old"))
                os.rename(tmp, final)
                shutil.rmtree(aside)
            else:
                os.rename(tmp, final)
            if marker:
                os.unlink(marker)
        self.barrier()  # every rank leaves the save together
        self.attempts += 1
        if self.args.fail_save == (self.rank, self.attempts):
            raise OSError("rank %d: its part of the save at step %d failed (as on a full disk)" % (self.rank, step))
        if self.world > 1 or self.rank == 0:  # a process alone (srun -n 2, no launcher) other than 0 wrote nothing
            ctl.saved(step, final)  # this rank's part is in place: resume_path counts the save once all ranks did
        self.log("save", step=step, why=why, took=round(time.time() - began, 3))


def main(group=None):
    args = parse_args()
    run = Run(args, group)
    try:
        return train(args, run)
    finally:
        run.close()


def resume(args, run, ctl):
    """The step to start at: after the newest save every rank committed, else 0."""
    began = time.time()
    path, last = trainctl.resume_path(args.ckpt_dir), None  # None: nothing committed yet, a fresh start
    snapshot = trainctl.is_snapshot(path)  # written out by the supervisor when a rank died
    if path is not None:
        with ctl.phase("restore"):  # trainctl report counts it apart from the rest of the start-up
            last = run.restore_snapshot(path) if snapshot else run.restore(path)
            time.sleep(args.restore_time)
    start = 0 if last is None else last + 1
    run.log("start", step=start, world=run.world, resumed_from=last, restore_s=round(time.time() - began, 3),
            run_id=trainctl.run_id(), from_snapshot=snapshot)  # the same in every task and requeue: your logger's run id
    return start


def make_model(args, ctl):
    """(model, optimizer, grad): a DDP model (--ddp), or a gradient averaged by hand
    (--allreduce), or neither; trainctl watches their collectives for hangs."""
    model = optimizer = grad = None
    if args.ddp:
        from torch.nn.parallel import DistributedDataParallel
        model = DistributedDataParallel(torch.nn.Linear(16, 4))
        optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
        trainctl.watch_ddp(model, ctl)
    if args.allreduce and dist is not None and dist.is_initialized():
        grad = torch.ones(4096)
        trainctl.watch_collectives(ctl)
    return model, optimizer, grad


def train_step(model, optimizer, grad, step_time):
    if model is not None:  # forward, backward (DDP all_reduces the gradients), step
        time.sleep(step_time)
        loss = model(torch.ones(8, 16)).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    else:
        time.sleep(step_time)  # train_step(batch) goes here
        if grad is not None:
            dist.all_reduce(grad)  # the gradients, averaged by hand


def train(args, run):
    ctl = trainctl.Controller(world_size=run.world)  # the ranks that save together: all, or this one alone
    if args.faulthandler:
        import faulthandler
        faulthandler.enable()
    start = resume(args, run, ctl)
    step_time = args.step_time * (args.slow_factor if run.rank == args.slow_rank else 1)
    task = int(os.environ.get("SLURM_ARRAY_TASK_ID", "1") or 1)
    crash_at = start + args.crash_after if args.crash_after else args.crash_at[(task - 1) % len(args.crash_at)]
    model, optimizer, grad = make_model(args, ctl)
    ignoring = False
    # This rank's own time in its steps' work and how many it did, in its exit event: what
    # trainctl report's straggler price can be checked against.
    work_s, worked = 0.0, 0
    for step in range(start, args.steps):
        if run.rank == args.hang_rank and step == args.hang_at:
            hang(run, step, args.hang_in, args.hang_for, grad)
        if args.crash_on and step == crash_at and fnmatch.fnmatchcase(node_name(), args.crash_on) and \
                args.crash_rank in (-1, run.rank):
            run.log("crash", step=step, node=args.crash_on, how=args.crash_how)
            if args.crash_how == "exception":
                raise RuntimeError("a bug in the training program")
            if args.crash_how == "sigkill":
                os.kill(os.getpid(), 9)  # SIGKILL
            if args.crash_how == "oom":
                hog = []
                while True:  # written pages, so they count against the limit
                    hog.append(b"x" * (256 << 20))
            if args.crash_how == "segv":
                os.kill(os.getpid(), 11)  # SIGSEGV
            os.abort()
        began = time.monotonic()
        train_step(model, optimizer, grad, step_time)
        work_s, worked = work_s + time.monotonic() - began, worked + 1
        d = ctl.check(step, allreduce=run.allreduce)  # None: torch.distributed, if initialised
        if args.snapshot_every and step % args.snapshot_every == 0:  # cheap: host memory, no file system
            ctl.snapshot(step, run.snapshot_state(step), args.ckpt_dir)
        if args.eval_every and step % args.eval_every == 0 and step > start:
            # Every rank marks it, also those that only wait for the others.
            with ctl.phase("eval"):
                run.log("eval", step=step)
                time.sleep(args.eval_time)  # evaluate(model, val_data) goes here
                run.barrier()
        if d.exit and run.rank == args.ignore_exit_rank:
            if not ignoring:
                run.log("ignore-exit", step=step, reason=d.reason)
            ignoring = True
            continue
        # d.saved: what there is to keep is saved already (no-progress: the last runs crashed
        # before getting past the step this one resumed at; or a supervisor went away during
        # the save just made), so no save (a large model's takes minutes).
        periodic = args.save_every and step % args.save_every == 0 and step > start
        if d.save or (d.exit and not d.saved) or (periodic and not d.exit):
            if args.async_save:  # committed when its write ends; the loop trains on meanwhile
                run.async_save(ctl, step, d.reason or d.save_reason or "periodic")
            else:
                with ctl.phase("save"):  # ends the save on trainctl's timeline when it ends
                    run.save(ctl, step, d.reason or d.save_reason or "periodic")
        if d.exit:
            run.log("exit", step=step, reason=d.reason, saved=d.saved, work_s=round(work_s, 4), worked_steps=worked)
            # An asynchronous save is still being written: this rank ends once it ended
            # (at most until just before the job's end; close() says what it waited).
            ctl.close()
            return 0
    if args.async_save:
        run.async_save(ctl, args.steps - 1, "finished")
    else:
        run.save(ctl, args.steps - 1, "finished")
    ctl.close()  # after the last write
    if run.rank == 0:
        open_own(os.path.join(args.ckpt_dir, "FINISHED")).close()
    run.log("finished", step=args.steps - 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
