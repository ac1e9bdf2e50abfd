"""The Python face of trainctl_ctl."""

import ctypes
import os
import sys
import threading
from typing import Any, Callable, ContextManager, List, Mapping, NamedTuple, Optional, Sequence, Union

# The reduction check() may be given: the votes in, every rank's MAX out (see mpi_allreduce).
Allreduce = Callable[[List[int]], Sequence[int]]

from . import _native
from . import flight_recorder as _flight_recorder
from . import pending as _pending
from .snapshots import snapshot as _snapshot
from ._native import TrainctlError, check as _check, lib as _lib
from .last_error import note_uncaught_errors
from .workers import protect_forked_workers


class Decision(NamedTuple):
    """What every rank does at this step. `reason` is why it exits ("" when it does not):
    kill-switch, deadline, preempted, memory, hang, peer-failed, signal, or a user switch's name; or
    no-progress: the array's last runs crashed before getting past the step this run resumed at
    (exit without a save: nothing is new since the checkpoint).
    `saved` comes with some exits: what there is to keep is saved already, so the loop exits
    without a save (no-progress; or a supervisor went away during the save the ranks just
    made, and that save is the last). The loop saves on `d.save or (d.exit and not d.saved)`.
    A named tuple: compared, printed and unpacked (`exit, save, reason, save_reason, saved = d`)."""

    exit: bool = False
    save: bool = False
    reason: str = ""
    save_reason: str = ""
    saved: bool = False


_SETTINGS = ("kill_switch", "save_switch", "deadline", "memory_min_free", "memory_threshold", "gpu_min_free",
             "poll_interval", "signals", "check_every", "state_path", "rank", "world_size", "straggler_factor",
             "straggler_agreements", "log_dir")


def _stack_signal():
    """The signal on which this process writes its Python stacks (all threads) for the
    supervisor's hang diagnosis: TRAINCTL_STACK_SIGNAL (a name or number; "none" turns
    it off), by default URG, which every process ignores unless it asks for it, so a
    stray one harms nothing."""
    import signal
    name = os.environ.get("TRAINCTL_STACK_SIGNAL", "URG").strip().upper()
    if name in ("", "NONE", "0"):
        return None
    try:
        return int(name) if name.isdigit() else getattr(signal, name if name.startswith("SIG") else "SIG" + name)
    except AttributeError:
        sys.stderr.write("trainctl: TRAINCTL_STACK_SIGNAL=%s: not a signal; accepted: a name such as URG, a number, "
                         "or none; using URG\n" % name)
        return signal.SIGURG


def _open_own_stacks_file(directory, name):
    """The new file `name` in `directory`, which must be this user's and writable by no one
    else: the node state's directory sits in /dev/shm, where everyone can write, and after
    systemd-logind removed it (RemoveIPC) another user could make it again under the same
    name, with a FIFO in place of the file (an open would wait forever) or a link. Made
    again here when it is missing, the user's alone, as the node state's own open does."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        dfd = os.open(directory, flags)
    except FileNotFoundError:
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:  # another rank of the node, a moment before
            pass
        dfd = os.open(directory, flags)
    try:
        st = os.fstat(dfd)
        if st.st_uid != os.getuid() or st.st_mode & 0o022:
            raise OSError("%s is not this user's, or others can write in it (owner uid %d, mode %o)" % (
                directory, st.st_uid, st.st_mode & 0o7777))
        # Exclusive: a file left by an earlier process with this pid is replaced, never
        # written through; non-blocking and no link, whatever is there.
        create = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(name, create, 0o600, dir_fd=dfd)
        except FileExistsError:
            os.unlink(name, dir_fd=dfd)
            fd = os.open(name, create, 0o600, dir_fd=dfd)
        os.set_blocking(fd, True)
        return fd
    finally:
        os.close(dfd)


def _register_stack_dump(state_path):
    """faulthandler on the stack signal, chained (a handler the program set before keeps
    running after the dump), writing to stacks.<pid> beside the node state, where the
    supervisor reads it; to stderr when this process has no node state directory. A
    handler the program sets later replaces it: the program's choice wins."""
    import faulthandler
    sig = _stack_signal()
    if sig is None:
        return None
    out = None
    if state_path and state_path.startswith("/"):
        path = os.path.join(os.path.dirname(state_path), "stacks.%d" % os.getpid())
        try:
            fd = _open_own_stacks_file(os.path.dirname(state_path), os.path.basename(path))
            out = (os.fdopen(fd, "a"), path)
            # Which block of the dump is the main thread's: faulthandler lists at most
            # 100 threads, newest first, so with many threads the main one may be cut.
            import threading
            out[0].write("trainctl main thread 0x%016x\n" % threading.main_thread().ident)
            out[0].flush()
        except OSError as e:
            sys.stderr.write("trainctl: cannot create %s (%s); stacks go to stderr\n" % (path, e))
    try:
        faulthandler.register(sig, file=out[0] if out else sys.stderr, all_threads=True, chain=True)
    except (ValueError, RuntimeError, OSError) as e:
        sys.stderr.write("trainctl: cannot dump stacks on signal %d (%s)\n" % (sig, e))
        if out:
            _remove(out)
        return None
    return (sig, out)


def _remove(out):
    f, path = out
    f.close()
    try:
        os.unlink(path)
    except OSError:
        pass


def _unregister_stack_dump(registered):
    if not registered:
        return
    import faulthandler
    sig, out = registered
    faulthandler.unregister(sig)
    if out:
        _remove(out)


def _distributed():
    """torch.distributed when the program already imported and initialised it, else None.
    trainctl never imports torch itself."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1:
            return dist
    except Exception:  # a half-initialised process group is treated as single-process
        return None
    return None


# Under a supervisor (which sets TRAINCTL_STATE) the stacks can be taken from import on:
# a hang in the process group's init, before any Controller exists, shows its Python
# frames too. A Controller made later uses this registration.
_AT_IMPORT = _register_stack_dump(os.environ["TRAINCTL_STATE"]) if os.environ.get("TRAINCTL_STATE") else None
if _AT_IMPORT:
    import atexit
    _PID_AT_IMPORT = os.getpid()
    # The file goes with the process (not with a forked child that exits normally).
    atexit.register(lambda: os.getpid() == _PID_AT_IMPORT and _unregister_stack_dump(_AT_IMPORT))


class _PhaseSection:
    __slots__ = ("_ctl", "_name")

    def __init__(self, ctl, name):
        self._ctl = ctl
        self._name = name

    def __enter__(self):
        self._ctl.phase_begin(self._name)
        return self

    def __exit__(self, *exc):
        self._ctl.phase_end()
        return False


class _SavingSection:
    """ctl.saving(step, path): the save phase around the block; this rank's part is
    committed when the block ends without an exception, or, when the block set `pending`
    (an asynchronous save's future), when that write ends well."""
    __slots__ = ("_ctl", "_step", "_path", "_phase", "_ticket", "pending")

    def __init__(self, ctl, step, path):
        self._ctl, self._step, self._path = ctl, step, path
        self._phase = _PhaseSection(ctl, "save")
        self._ticket = None
        self.pending = None

    def __enter__(self):
        self._phase.__enter__()
        # From here the save is this rank's pending write: a marker left at the path by an
        # earlier save of it goes now (a save redone in place is uncommitted until it ends).
        self._ticket = self._ctl._begin_write(self._step, self._path)
        return self

    def __exit__(self, kind, value, tb):
        self._phase.__exit__(kind, value, tb)
        if kind is not None:
            self._ctl._end_write(self._ticket, "the save block raised %s" % _first_line(value), self._step,
                                 self._path)
        elif self.pending is not None:
            self._ctl._end_write_when(_pending.completion(self.pending), self._ticket, self._step, self._path)
        elif not os.path.lexists(self._path):
            self._ctl._end_write(self._ticket, "nothing was written at %s" % os.fsdecode(self._path), self._step,
                                 self._path)
            raise ValueError("trainctl: saved(): '%s' does not exist; accepted: the checkpoint directory or file "
                             "this rank just wrote, this user's, not a link" % os.fsdecode(self._path))
        else:
            self._ctl._end_write(self._ticket, "", self._step, self._path)
        return False


def _first_line(error):
    lines = ("%s: %s" % (type(error).__name__, error)).strip().splitlines()
    return lines[0] if lines else type(error).__name__


class _ComputeSection:
    __slots__ = ("_ctl",)

    def __init__(self, ctl):
        self._ctl = ctl

    def __enter__(self):
        self._ctl.compute_begin()
        return self

    def __exit__(self, *exc):
        self._ctl.compute_end()


class Controller:
    """Configured from the environment (KILL_SWITCH, SAVE_SWITCH, TRAINCTL_*); keyword
    arguments override it: kill_switch, save_switch, deadline (unix seconds),
    memory_min_free ("5%" or "2G" left), gpu_min_free, poll_interval ("10s"), signals
    ("USR1,TERM" or "none"), check_every (steps between agreements), state_path, rank,
    world_size, exit_switches / save_switches ({name: path}). The rank comes from RANK,
    OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID unless `rank` is given;
    world_size, the ranks whose saves make one checkpoint (saved()), from WORLD_SIZE,
    OMPI_COMM_WORLD_SIZE, PMIX_SIZE, PMI_SIZE or SLURM_NTASKS unless it is given."""

    def __init__(self, exit_switches: Optional[Mapping[str, str]] = None,
                 save_switches: Optional[Mapping[str, str]] = None, **settings: Any) -> None:
        L = _lib()
        self._ctl = None
        unknown = sorted(set(settings) - set(_SETTINGS))
        if unknown:
            raise TypeError("trainctl.Controller: unknown setting %s; accepted: %s"
                            % (", ".join(unknown), ", ".join(_SETTINGS + ("exit_switches", "save_switches"))))
        cfg = ctypes.c_void_p()
        _check(L.trainctl_config_create(ctypes.byref(cfg)))
        try:
            for key, value in settings.items():
                if value is None:
                    continue
                if isinstance(value, (list, tuple)):
                    value = ",".join(str(v) for v in value)
                _check(L.trainctl_config_set(cfg, key.encode(), str(value).encode()))
            ctl = ctypes.c_void_p()
            _check(L.trainctl_create(cfg, ctypes.byref(ctl)))
            self._ctl = ctl
        finally:
            L.trainctl_config_destroy(cfg)
        for kind, switches in ((_native.SWITCH_EXIT, exit_switches), (_native.SWITCH_SAVE, save_switches)):
            for name, path in (switches or {}).items():
                _check(L.trainctl_add_switch(self._ctl, kind, name.encode(), str(path).encode()))
        self._stacks = None if _AT_IMPORT else _register_stack_dump(self.state_path)
        # DataLoader workers forked from now on live through the notices (workers.py).
        given = settings.get("signals")
        protect_forked_workers(None if given is None else ",".join(str(v) for v in given)
                               if isinstance(given, (list, tuple)) else str(given))
        # An uncaught exception's line goes to the crash finding (last_error.py).
        note_uncaught_errors(self)
        # Bound once: the poll is then one ctypes call and no attribute lookups.
        self._poll = L.trainctl_should_exit
        self._vote = (ctypes.c_int64 * _native.VOTE_LEN)()
        self._rank_set = False
        self.last = Decision()
        # Writes handed off (saved(..., pending), saving()'s pending): their tickets, and
        # the callbacks inside the library now, which close() lets finish first.
        self._writes = threading.Condition(threading.Lock())
        self._tickets = set()
        self._in_callbacks = 0
        self._exit_wait = False
        self._dying = False  # an uncaught exception is ending the process (last_error.py)

    # -- polling, no agreement ------------------------------------------------------
    def should_exit(self) -> bool:
        """This process's view: True once any exit condition is seen here."""
        if self._ctl is None:
            raise ValueError("trainctl: this Controller is closed")
        return self._poll(self._ctl) != 0

    def should_save(self) -> bool:
        """True once per touch of a save switch (consumed by this call)."""
        return bool(_check(self._L.trainctl_should_save(self._ctl)))

    # -- the agreed decision ----------------------------------------------------------
    def check(self, step: int, allreduce: Optional[Allreduce] = None) -> Decision:
        """The decision all ranks take at this step.

        Ranks agree every `check_every` steps through one element-wise MAX reduction of
        a small integer vector; between agreements only an exit already agreed is
        repeated. The reduction is `allreduce` when given: any callable that takes a list
        of ints and returns the element-wise MAX over all ranks as a sequence of ints
        (for mpi4py: `trainctl.mpi_allreduce(comm)`). Without it, torch.distributed when
        it is initialised with world size > 1; otherwise one process, and every step
        decides."""
        L = self._L
        if allreduce is None:
            dist = _distributed()
            if dist is not None:
                if not self._rank_set:
                    _check(L.trainctl_set_rank(self._ctl, dist.get_rank()))
                    self._rank_set = True
                    # Under a supervisor: its hang dump can read torch's flight recorder.
                    if os.environ.get("TRAINCTL_STATE"):
                        _flight_recorder.start(self.state_path, dist)
                allreduce = self._torch_allreduce
        if allreduce is None:
            # One process's own view: every touch of a save switch is one save here.
            bits = _check(L.trainctl_check(self._ctl, step, None, None))
        else:
            due = _check(L.trainctl_vote(self._ctl, step, self._vote, _native.VOTE_LEN))
            if not due:
                return Decision(self.last.exit, False, self.last.reason, "", self.last.saved)
            self._reduce(allreduce)
            bits = _check(L.trainctl_decide(self._ctl, step, self._vote, _native.VOTE_LEN))
        self.last = Decision(bool(bits & _native.EXIT), bool(bits & _native.SAVE),
                             L.trainctl_exit_reason(self._ctl).decode(),
                             L.trainctl_save_reason(self._ctl).decode(), bool(bits & _native.SAVED))
        return self.last

    def _reduce(self, allreduce):
        reduced = allreduce(list(self._vote))
        if reduced is None or len(reduced) != _native.VOTE_LEN:
            raise TrainctlError(_native.EREDUCE,
                                "trainctl: check(): allreduce returned %s; expected the %d element-wise "
                                "maxima as a sequence of ints" % (
                                    "None" if reduced is None else "%d values" % len(reduced), _native.VOTE_LEN))
        for i, v in enumerate(reduced):
            self._vote[i] = int(v)

    @staticmethod
    def _torch_allreduce(values):
        import torch  # present: torch.distributed is initialised
        dist = sys.modules["torch.distributed"]
        device = "cpu"
        if dist.get_backend() == "nccl":
            device = torch.device("cuda", torch.cuda.current_device())
        t = torch.tensor(values, dtype=torch.int64, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.tolist()

    # -- the rank's own compute, for the straggler finding ---------------------------
    def compute_begin(self) -> None:
        """Marks where this step's own work begins (see compute()). Any thread."""
        self._L.trainctl_compute_begin(self._ctl)

    def compute_end(self) -> None:
        """Marks where it ends. Any thread."""
        self._L.trainctl_compute_end(self._ctl)

    def compute(self) -> ContextManager[None]:
        """`with ctl.compute(): ...` around the part of a step that is this rank's own
        work. Once steps are marked, stragglers are judged by marked time, not by wall
        time between agreements (which a gradient all_reduce in every step makes equal on
        all ranks). Under torch DDP, loss.backward() waits for the slowest rank's
        gradients: mark the forward and the data loading only, or let
        trainctl.watch_ddp(model, ctl) mark the whole step automatically."""
        return _ComputeSection(self)

    # -- phases of the loop, for the hang clock --------------------------------------
    def phase_begin(self, name: str) -> None:
        """Marks the start of a phase other than training (see phase())."""
        _check(self._L.trainctl_phase_begin(self._ctl, str(name).encode()))

    def phase_end(self) -> None:
        """Marks the end of the innermost phase begun."""
        _check(self._L.trainctl_phase_end(self._ctl))

    def phase(self, name: str) -> ContextManager[None]:
        """`with ctl.phase("eval"): ...` around a part of the loop that is not a training
        step: an evaluation, or the loop's own save ("save"). A rank that is quiet inside
        it is judged by the phase's own hang budget (--hang-phase-timeout NAME=DURATION,
        else learnt from the longest this phase took in the job array), not by
        --hang-timeout. Mark it on every rank, also ranks that only wait for rank 0.
        The name is 1-31 of letters, digits, '_', '.', '-' (ValueError otherwise)."""
        return _PhaseSection(self, name)

    # -- committed saves ------------------------------------------------------------
    def saved(self, step: int, path: Union[str, "os.PathLike[str]"], pending: Any = None) -> bool:
        """This rank's part of the save at `step` is in place at `path`: the checkpoint's
        directory, or its file, of this user's and no link. Call it on every rank once the
        files it waits for are written (after rank 0's save and a barrier, when only rank 0
        writes); trainctl.resume_path() then finds the save complete only when every rank
        of the world did. Give each save its own name (the step in it): a name reused for
        every save keeps the last save's commitment while the next one overwrites it.

        `pending`: the write goes on after this call (an asynchronous save): a
        concurrent.futures.Future, a torch.futures.Future, or what
        torch.distributed.checkpoint.async_save returns. Then this rank's part is committed
        when that write ends well, never before; a write that fails commits nothing and
        the log names the save and the error. The rank does not end while it is pending
        (see close()). Call it on the loop's thread, right after the save is handed off.

        True when committed now; False when not (pending: committed when the write ends;
        or the small marker, .trainctl-committed.RANK inside the directory,
        .NAME.trainctl-committed.RANK beside the file, could not be written: the log says
        why, and the loop trains on). ValueError when `path` is no such checkpoint;
        TypeError when `pending` is none of the above."""
        if pending is not None:
            done = _pending.completion(pending)
            ticket = self._begin_write(step, path)
            self._end_write_when(done, ticket, step, path)
            return False
        fn = _native.optional("trainctl_saved")
        rc = fn(self._ctl, int(step), os.fsencode(path))
        if rc == _native.ESYSTEM:  # its marker could not be written: said by the library
            return False
        _check(rc)
        return True

    def wait_for_saves(self, timeout: Optional[float] = None) -> int:
        """Waits for this rank's pending writes (saved(..., pending)): at most `timeout`
        seconds (None: no bound of its own), and never past 2 s before the job's end that
        the supervisor knows, so that a write the end will cut is said before it is cut
        (and is not committed). Logs how long it waited. Returns how many writes are still
        pending. close() and the interpreter's end call it."""
        if self._ctl is None:
            return 0
        fn = _native.optional("trainctl_wait_saves")
        return _check(fn(self._ctl, -1.0 if timeout is None else float(timeout)))

    # -- writes handed off: one ticket each, ended by the future's callback ---------------
    def _begin_write(self, step, path):
        if self._ctl is None:
            raise ValueError("trainctl: this Controller is closed")
        fn = _native.optional("trainctl_save_begin")
        ticket = _check(fn(self._ctl, int(step), os.fsencode(path)))
        with self._writes:
            self._tickets.add(ticket)
        if not self._exit_wait:
            self._exit_wait = True
            # A rank that ends on its own (an exit decision, its last step) waits for its
            # writes; one dying of an uncaught exception does not (a crash costs seconds).
            _pending.wait_at_exit(self, lambda ctl: None if ctl._dying else ctl.wait_for_saves())
        return ticket

    def _save_starts(self, path):
        """A save of this rank begins at `path` (committed later with saved()): its marker
        there from an earlier save goes now."""
        if self._ctl is None:
            raise ValueError("trainctl: this Controller is closed")
        _check(_native.optional("trainctl_save_starts")(self._ctl, os.fsencode(path)))

    def _end_write_when(self, done, ticket, step, path):
        # concurrent.futures and torch run the callback at once when the write has ended.
        done.add_done_callback(lambda f: self._end_write(ticket, _pending.error_of(f), step, path))

    def _end_write(self, ticket, error, step, path):
        """From any thread: the write `ticket` ended (`error` "" when it ended well)."""
        with self._writes:
            ctl = self._ctl
            if ctl is None or ticket not in self._tickets:
                sys.stderr.write("trainctl: the save at step %d (%s) ended after its Controller was closed: it is "
                                 "not committed\n" % (int(step), os.fsdecode(path)))
                return
            self._tickets.discard(ticket)
            self._in_callbacks += 1
        try:
            fn = _native.optional("trainctl_save_end")
            _check(fn(ctl, ticket, error.encode("utf-8", "replace") if error else None))
        finally:
            with self._writes:
                self._in_callbacks -= 1
                self._writes.notify_all()

    def snapshot(self, step: int, state: Any, ckpt_dir: Union[str, "os.PathLike[str]"]) -> bool:
        """Keeps `state` (a state dict of tensors, or anything picklable) as this rank's
        snapshot at `step` in host memory on the node, cheap enough for every few steps;
        no file system sees it while the rank lives. When a rank dies (an exception, a
        signal, the launcher after a peer died, --hang-action=end-step), the node's
        supervisor writes its ranks' two newest snapshots into `ckpt_dir` as committed
        saves (snapshot-STEP/rank-RANK.snapshot), unless a save as new is committed there
        already; resume_path() counts them like any save, and trainctl.load_snapshot(path)
        reads one when trainctl.is_snapshot(path). Call it on every rank at the same steps.
        True when kept; False (one line logged the first time) with no supervisor on this
        node, or no memory for it (the snapshot before stays kept)."""
        return _snapshot(self, step, state, ckpt_dir)

    def note_error(self, text: str) -> None:
        """The error this rank is about to die of: its first line (printable ASCII, 200
        characters at most) goes into the rank's heartbeat slot, where the supervisor's
        crash finding and `trainctl report` name it when this rank dies first. The first
        call counts. An uncaught exception is noted without this call (the excepthook the
        Controller installs); call it where the loop catches the error and exits itself.
        Nothing is noted by an older library that lacks the call, or without a node state."""
        if self._ctl is None:
            return
        fn = getattr(self._L, "trainctl_note_error", None)
        if fn is None:
            return
        fn.restype, fn.argtypes = _native._OPTIONAL["trainctl_note_error"]
        _check(fn(self._ctl, str(text).encode("utf-8", "replace")))

    def saving(self, step: int, path: Union[str, "os.PathLike[str]"]) -> ContextManager[Any]:
        """`with ctl.saving(step, path): save_checkpoint(path)`: the save is a phase for the
        hang clock ("save") while the block runs, and once the block ends without an
        exception this rank's part is committed (saved(step, path)). A block that raises
        commits nothing: resume_path() then goes back to the save before. Where rank 0
        alone writes, put the barrier inside the block, so every rank commits after it.
        An asynchronous save sets the write it started as the block's `pending`:

            with ctl.saving(step, path) as save:
                save.pending = dcp.async_save(state, checkpoint_id=path, process_group=pg)

        and its part is committed when that write ends well (see saved()). A marker this
        rank left at `path` before goes as the block begins: a save redone in place is not
        committed until it ends."""
        return _SavingSection(self, step, path)

    # -- settings that may change while running --------------------------------------
    def set_deadline(self, unix_seconds: float) -> None:
        """Exit once now >= unix_seconds (0 clears it)."""
        _check(self._L.trainctl_set_deadline(self._ctl, float(unix_seconds)))

    def add_exit_switch(self, name: str, path: str) -> None:
        _check(self._L.trainctl_add_switch(self._ctl, _native.SWITCH_EXIT, name.encode(), str(path).encode()))

    def add_save_switch(self, name: str, path: str) -> None:
        _check(self._L.trainctl_add_switch(self._ctl, _native.SWITCH_SAVE, name.encode(), str(path).encode()))

    @property
    def check_every(self) -> int:
        return self._L.trainctl_check_every(self._ctl)

    @property
    def state_path(self) -> str:
        return self._L.trainctl_state_path(self._ctl).decode()

    @property
    def stat_calls(self) -> int:
        """Metadata requests (stat calls) made by this node's publisher so far."""
        return self._L.trainctl_stat_calls(self._ctl)

    # -- lifetime -----------------------------------------------------------------------
    @property
    def _L(self):
        if self._ctl is None:
            raise ValueError("trainctl: this Controller is closed")
        return _lib()

    def close(self, timeout: Optional[float] = None) -> None:
        """Waits for this rank's pending writes (wait_for_saves(timeout)), then stops this
        process's publisher thread and restores the signal handlers it replaced. A write
        still pending then is not committed, even if it ends later (said in the log)."""
        _unregister_stack_dump(self.__dict__.pop("_stacks", None))
        if self._ctl is None:
            return
        if self.__dict__.get("_exit_wait"):  # it handed writes off: the library knows which still run
            # Dying of an uncaught exception: no wait, the writes still running are said.
            self.wait_for_saves(0 if self.__dict__.get("_dying") else timeout)
        writes = self.__dict__.get("_writes")
        if writes is None:  # made only in part: __init__ raised before its writes
            ctl, self._ctl = self._ctl, None
        else:
            with writes:
                ctl, self._ctl = self._ctl, None
                self._tickets.clear()
                while self._in_callbacks:
                    writes.wait()
        _lib().trainctl_destroy(ctl)

    def __enter__(self) -> "Controller":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

