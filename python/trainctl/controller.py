"""The Python face of trainctl_ctl."""

import ctypes
import sys

from . import _native
from ._native import check as _check, lib as _lib


class Decision:
    """What every rank does at this step. `reason` is why it exits ("" when it does not):
    kill-switch, deadline, preempted, memory, signal, or a user switch's name."""

    __slots__ = ("exit", "save", "reason", "save_reason")

    def __init__(self, exit=False, save=False, reason="", save_reason=""):
        self.exit = exit
        self.save = save
        self.reason = reason
        self.save_reason = save_reason

    def __repr__(self):
        return "Decision(exit=%r, save=%r, reason=%r, save_reason=%r)" % (
            self.exit, self.save, self.reason, self.save_reason)


_SETTINGS = ("kill_switch", "save_switch", "deadline", "memory_min_free", "memory_threshold", "gpu_min_free",
             "poll_interval", "signals", "check_every", "state_path", "rank")


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


class Controller:
    """Configured from the environment (KILL_SWITCH, SAVE_SWITCH, TRAINCTL_*); keyword
    arguments override it: kill_switch, save_switch, deadline (unix seconds),
    memory_min_free ("5%" or "2G" left), gpu_min_free, poll_interval ("10s"), signals
    ("USR1,TERM" or "none"), check_every (steps between agreements), state_path, rank,
    exit_switches / save_switches ({name: path})."""

    def __init__(self, exit_switches=None, save_switches=None, **settings):
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
        # Bound once: the poll is then one ctypes call and no attribute lookups.
        self._poll = L.trainctl_should_exit
        self._vote = (ctypes.c_int64 * _native.VOTE_LEN)()
        self._rank_set = False
        self.last = Decision()

    # -- polling, no agreement ------------------------------------------------------
    def should_exit(self):
        """This process's view: True once any exit condition is seen here."""
        if self._ctl is None:
            raise ValueError("trainctl: this Controller is closed")
        return self._poll(self._ctl) != 0

    def should_save(self):
        """True once per touch of a save switch (consumed by this call)."""
        return bool(_check(self._L.trainctl_should_save(self._ctl)))

    # -- the agreed decision ----------------------------------------------------------
    def check(self, step):
        """The decision all ranks take at this step. With torch.distributed initialised
        (world size > 1) ranks agree every `check_every` steps through one all_reduce
        (MAX) of a small integer vector; in a single process every step decides."""
        L = self._L
        dist = _distributed()
        due = _check(L.trainctl_vote(self._ctl, step, self._vote, _native.VOTE_LEN))
        if dist is not None:
            if not self._rank_set:
                _check(L.trainctl_set_rank(self._ctl, dist.get_rank()))
                self._rank_set = True
            if not due:
                return Decision(self.last.exit, False, self.last.reason, "")
            self._reduce(dist)
        bits = _check(L.trainctl_decide(self._ctl, step, self._vote, _native.VOTE_LEN))
        self.last = Decision(bool(bits & _native.EXIT), bool(bits & _native.SAVE),
                             L.trainctl_exit_reason(self._ctl).decode(),
                             L.trainctl_save_reason(self._ctl).decode())
        return self.last

    def _reduce(self, dist):
        import torch  # present: torch.distributed is initialised
        device = "cpu"
        if dist.get_backend() == "nccl":
            device = torch.device("cuda", torch.cuda.current_device())
        t = torch.tensor(list(self._vote), dtype=torch.int64, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        for i, v in enumerate(t.tolist()):
            self._vote[i] = v

    # -- settings that may change while running --------------------------------------
    def set_deadline(self, unix_seconds):
        """Exit once now >= unix_seconds (0 clears it)."""
        _check(self._L.trainctl_set_deadline(self._ctl, float(unix_seconds)))

    def add_exit_switch(self, name, path):
        _check(self._L.trainctl_add_switch(self._ctl, _native.SWITCH_EXIT, name.encode(), str(path).encode()))

    def add_save_switch(self, name, path):
        _check(self._L.trainctl_add_switch(self._ctl, _native.SWITCH_SAVE, name.encode(), str(path).encode()))

    @property
    def check_every(self):
        return self._L.trainctl_check_every(self._ctl)

    @property
    def state_path(self):
        return self._L.trainctl_state_path(self._ctl).decode()

    @property
    def stat_calls(self):
        """Metadata requests (stat calls) made by this node's publisher so far."""
        return self._L.trainctl_stat_calls(self._ctl)

    # -- lifetime -----------------------------------------------------------------------
    @property
    def _L(self):
        if self._ctl is None:
            raise ValueError("trainctl: this Controller is closed")
        return _lib()

    def close(self):
        """Stops this process's publisher thread and restores the signal handlers it replaced."""
        if self._ctl is not None:
            _lib().trainctl_destroy(self._ctl)
            self._ctl = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
