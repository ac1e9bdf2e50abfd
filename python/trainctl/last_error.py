"""The error a rank dies of, named by trainctl's crash finding.

When a rank dies of an uncaught exception, the exception's line and where it was raised
("RuntimeError: CUDA error: an illegal memory access (train.py:212 in step)") go into the
rank's heartbeat slot. When that rank was the first to die, its supervisor's crash
finding names it in the task's log, and `trainctl report` in the task's line. The hook
goes in front of the one that was there, which still prints the traceback; it is
installed once a Controller exists. A loop that catches the error itself and exits
calls Controller.note_error(text) instead.
"""

import os
import sys
import traceback
import weakref
from typing import Any, Callable, List, Optional

# The newest Controller of this process, weakly: a closed or collected one notes nothing.
_controller: List[Optional[Callable[[], Any]]] = [None]
_installed = [False]


def describe(kind: type, value: BaseException, tb: Any) -> str:
    """One line: the exception's type and message, as its traceback's last line shows
    them (the first line of a message of several, without the notes Python 3.11 adds),
    then where it was raised (the innermost frame)."""
    name = kind.__qualname__
    if kind.__module__ not in ("builtins", "__main__"):
        name = kind.__module__ + "." + name
    try:
        message = str(value).split("\n")[0]
    except Exception:  # a __str__ that raises: the type alone
        message = ""
    line = name + (": " + message if message else "")
    frames = traceback.extract_tb(tb) if tb is not None else []
    if frames:
        f = frames[-1]
        line += " (%s:%s in %s)" % (os.path.basename(f.filename), f.lineno, f.name)
    return line


def note_uncaught_errors(controller: Any) -> None:
    """From now on an uncaught exception of this process goes to `controller` first."""
    _controller[0] = weakref.ref(controller)
    if _installed[0]:
        return
    _installed[0] = True
    previous = sys.excepthook

    def hook(kind: type, value: BaseException, tb: Any) -> None:
        try:
            ctl = _controller[0]() if _controller[0] is not None else None
            if ctl is not None:
                ctl._dying = True  # its pending writes are not waited for (controller.py)
            if ctl is not None and not issubclass(kind, KeyboardInterrupt):
                ctl.note_error(describe(kind, value, tb))
        except Exception:  # the traceback below matters more than this line
            pass
        previous(kind, value, tb)

    sys.excepthook = hook
