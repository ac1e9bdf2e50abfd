"""Writes that go on after a save hands them off (an asynchronous checkpoint): what
Controller.saved(step, path, pending) and saving()'s `pending` accept, reading how each
ended, and waiting for them before the interpreter ends."""

import atexit
import threading
import weakref
from typing import Any, Callable


def completion(pending: Any) -> Any:
    """The future whose end is the write's end: `pending` itself when it has
    add_done_callback (concurrent.futures.Future, torch.futures.Future, what DCP's
    async_save returns up to torch 2.8), or the upload_completion of DCP's
    AsyncSaveResponse (torch 2.9+: the staging's end is not the write's). TypeError
    otherwise, before anything is begun."""
    upload = getattr(pending, "upload_completion", None)
    if upload is not None:
        pending = upload
    if callable(getattr(pending, "add_done_callback", None)):
        return pending
    raise TypeError("trainctl: saved(): pending is a %s; accepted: a concurrent.futures.Future, a "
                    "torch.futures.Future, or what torch.distributed.checkpoint.async_save returns"
                    % type(pending).__name__)


def error_of(done: Any) -> str:
    """"" when the ended future `done` ended well, else its error's first line."""
    error = None
    try:
        cancelled = getattr(done, "cancelled", None)
        if callable(cancelled) and cancelled():
            return "the write was cancelled"
        exception = getattr(done, "exception", None)
        if callable(exception):  # concurrent.futures: the exception, or None
            error = exception()
        else:  # torch.futures.Future: value() raises the write's error
            done.value()
    except BaseException as e:  # noqa: B902 - whatever the write raised is its error
        error = e
    if error is None:
        return ""
    lines = ("%s: %s" % (type(error).__name__, error)).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def wait_at_exit(controller: Any, wait: Callable[[Any], None]) -> None:
    """Calls wait(controller) as the interpreter ends, while the controller lives: before
    Python joins its threads (threading's own exit hooks, Python 3.9+, where the
    executors that write asynchronous saves join theirs), else with atexit (3.8: the
    executors' hook is an atexit one too, and the later registered runs first)."""
    ref = weakref.ref(controller)

    def at_exit():
        ctl = ref()
        if ctl is not None:
            wait(ctl)

    register = getattr(threading, "_register_atexit", None)
    try:
        if register is not None:
            register(at_exit)
        else:
            atexit.register(at_exit)
    except RuntimeError:  # the interpreter is ending already: close() still waits
        pass
