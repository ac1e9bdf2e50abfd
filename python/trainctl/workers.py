"""DataLoader workers live through a notice, so that their rank can make its save.

SLURM sends its signals to every process of the step: SIGTERM at a preemption or a
scancel, the --signal notice (SIGUSR1) before the time limit. The rank catches them
(trainctl's notice) and saves at its next step; but a torch DataLoader worker, a child of
the rank, dies of SIGTERM (torch's worker handler re-raises it) or of SIGUSR1 (its default
action), and the rank's next batch then raises "DataLoader worker (pid ...) exited
unexpectedly" before the save. A worker that trainctl protects ignores the notice signals
the rank catches (TRAINCTL_SIGNALS, USR1,TERM by default) when anyone but its rank sends
them; it still ends when its rank shuts the loader down or sends it SIGTERM (at the
rank's exit), when its rank is gone (torch's watchdog, within 5 s), and at SLURM's SIGKILL.

Workers forked from the rank (multiprocessing's default start method on Linux up to
Python 3.13, or multiprocessing_context="fork") are protected once a Controller exists:
nothing to add. Spawned workers (multiprocessing_context="spawn") are not forked from the
rank: give them the worker_init_fn

    DataLoader(data, num_workers=4, multiprocessing_context="spawn",
               worker_init_fn=trainctl.dataloader_worker_init)

Workers from the fork server (Python 3.14's default start method) are not protected: the
server itself dies of SLURM's SIGTERM, and torch's workers end with it. Give such a
DataLoader multiprocessing_context="fork" (or "spawn" with the worker_init_fn).
"""

import os
import signal
import sys
import threading
from typing import List, Optional

_signals: List[Optional[List[int]]] = [None]  # what the rank's Controller catches, once one was made
_registered = [False]


def notice_signals(text: Optional[str] = None) -> List[int]:
    """The signal numbers named in `text` ("USR1,TERM", "SIGUSR1", "10", "none"), else in
    TRAINCTL_SIGNALS, else USR1 and TERM; names that are no signal are left out (the
    Controller reports them)."""
    if text is None:
        text = os.environ.get("TRAINCTL_SIGNALS") or "USR1,TERM"
    out = []
    for word in str(text).replace(" ", "").split(","):
        if not word or word.lower() == "none":
            continue
        if word.isdigit():
            number = int(word)
        else:
            name = word.upper()
            number = getattr(signal, name if name.startswith("SIG") else "SIG" + name, None)
        if isinstance(number, int) and 0 < number < signal.NSIG and number not in (signal.SIGKILL, signal.SIGSTOP):
            out.append(int(number))
    return out


def dataloader_worker_init(worker_id: Optional[int] = None) -> None:
    """A DataLoader's worker_init_fn: this worker lives through the notice signals its
    rank catches, so that it still serves batches while the rank saves. Only needed where
    workers are not forked from the rank (see the module's text)."""
    numbers = notice_signals() if _signals[0] is None else _signals[0]
    for number in numbers:
        if number == signal.SIGTERM:
            continue
        try:
            signal.signal(number, signal.SIG_IGN)
        except (OSError, ValueError):  # not the main thread, or a signal Python may not set
            pass
    if signal.SIGTERM in numbers:
        # The rank ends its workers with SIGTERM too (at its exit, or when one does not
        # stop): that one still ends the worker, as torch's own handler does. SIGTERM is
        # blocked in every thread and taken by one that reads who sent it.
        parent = os.getppid()
        rank = _parent_of(parent) if _is_forkserver(parent) else parent
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        threading.Thread(target=_end_on_the_ranks_sigterm, args=(parent, rank), name="trainctl-worker-sigterm",
                         daemon=True).start()


def _end_on_the_ranks_sigterm(parent: int, rank: int) -> None:
    while True:
        info = signal.sigwaitinfo({signal.SIGTERM})
        if info.si_pid in (parent, rank) or os.getppid() != parent:
            os._exit(0)


def _is_forkserver(pid: int) -> bool:
    """Whether `pid` is multiprocessing's fork server (Python 3.14's default start method
    on Linux), whose parent is the rank."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return b"multiprocessing.forkserver" in f.read(4096)
    except OSError:
        return False


def _parent_of(pid: int) -> int:
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return int(f.read(4096).rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return pid


def _patch_forked_worker() -> None:
    """In a child forked from the rank: torch's worker loop sets its own handlers (SIGTERM
    re-raised) when it starts; the notice signals are ignored right after that."""
    module = sys.modules.get("torch.utils.data._utils.signal_handling")
    original = getattr(module, "_set_worker_signal_handlers", None)
    if original is None or getattr(original, "_trainctl", False):
        return

    def set_worker_signal_handlers(*args, **kwargs):
        original(*args, **kwargs)
        dataloader_worker_init()

    set_worker_signal_handlers._trainctl = True  # type: ignore[attr-defined]
    module._set_worker_signal_handlers = set_worker_signal_handlers  # type: ignore[union-attr]


def protect_forked_workers(signals: Optional[str]) -> None:
    """Called by Controller(): every DataLoader worker forked from this process from now
    on ignores the notice signals (`signals` as the Controller was given them)."""
    _signals[0] = notice_signals(signals)
    if not _registered[0] and hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_patch_forked_worker)
        _registered[0] = True
