"""ctypes binding of trainctl.h. Thin on purpose: the logic lives in the C library."""

import atexit
import ctypes
import logging
import os
import platform
import stat
import sys
import sysconfig

VOTE_LEN = 24
EXIT = 1
SAVE = 2
SAVED = 4  # with EXIT: exit without a save
SWITCH_EXIT = 1
SWITCH_SAVE = 2
_EINVAL = -1
_EINTERNAL = -5
EREDUCE = -4  # TRAINCTL_EREDUCE: the reduction failed


class TrainctlError(RuntimeError):
    """A libtrainctl call failed; the message is the library's one-line reason."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _open_checked(path):
    """Opens a library found next to this package, if it may be loaded: (fd, '') or
    (None, why not). It runs as the user, so no other user may be able to change what it
    loads, neither before the check nor between the check and the load:
    - every directory on the way, links followed, belongs to root or to this user and
      nobody else may write it, except a root-owned sticky one such as /tmp (where others
      cannot rename what is not theirs); the file's own directory, not even that;
    - every link on the way belongs to root or to this user (a link is never followed in
      a directory another user could write, where it could be swapped);
    - the file opened (never through a link at its last step) is the regular file walked
      to, belongs to root or to this user, and nobody else may write it.
    The caller loads the descriptor (/proc/self/fd/N), not the path again."""
    me = os.getuid()
    todo = [c for c in os.path.abspath(path).split("/") if c]
    where, hops = "/", 0
    st = os.stat("/")
    while todo:
        part = todo.pop(0)
        if part in (".", ""):
            continue
        if part == "..":
            where = os.path.dirname(where)
            continue
        here = os.path.join(where, part)
        st = os.lstat(here)
        last = not todo
        if last and st.st_uid not in (0, me):  # the most telling reason first
            return None, "%s belongs to uid %d, not to you or root" % (here, st.st_uid)
        d = os.stat(where)
        if d.st_uid not in (0, me):
            return None, "its directory %s belongs to uid %d, not to you or root" % (where, d.st_uid)
        sticky_root = d.st_uid == 0 and d.st_mode & 0o1000
        if d.st_mode & 0o022 and (last or not sticky_root):
            return None, "its directory %s is writable by others (mode %04o)" % (where, d.st_mode & 0o7777)
        if stat.S_ISLNK(st.st_mode):
            if st.st_uid not in (0, me):
                return None, "the link %s belongs to uid %d, not to you or root" % (here, st.st_uid)
            hops += 1
            if hops > 40:
                return None, "too many links on the way to %s" % path
            target = os.readlink(here)
            if target.startswith("/"):
                where = "/"
            todo = [c for c in target.split("/") if c] + todo
            continue
        where = here
    if not stat.S_ISREG(st.st_mode):
        return None, "%s is not a regular file" % where
    fd = os.open(where, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    f = os.fstat(fd)
    why = ""
    if (f.st_dev, f.st_ino) != (st.st_dev, st.st_ino):
        why = "%s changed while it was checked" % where
    elif f.st_uid not in (0, me):
        why = "%s belongs to uid %d, not to you or root" % (where, f.st_uid)
    elif f.st_mode & 0o022:
        why = "%s is writable by others (mode %04o)" % (where, f.st_mode & 0o7777)
    if why:
        os.close(fd)
        return None, why
    return fd, ""


def _candidates():
    """TRAINCTL_LIBRARY, then the copy a wheel carries inside this package, then the lib
    directory of the install or build tree this package sits in
    (<prefix>/lib/python3/dist-packages/trainctl -> <prefix>/lib and Debian's multiarch
    <prefix>/lib/<triplet>), then the system's loader path. Nothing else."""
    env = os.environ.get("TRAINCTL_LIBRARY")
    if env:
        yield env, True
    here = os.path.dirname(os.path.abspath(__file__))
    yield os.path.join(here, "libtrainctl.so.0"), False
    arch = sysconfig.get_config_var("MULTIARCH") or "%s-linux-gnu" % platform.machine()
    lib = os.path.normpath(os.path.join(here, "..", "..", ".."))
    yield os.path.join(lib, arch, "libtrainctl.so.0"), False
    yield os.path.join(lib, "libtrainctl.so.0"), False
    yield "libtrainctl.so.0", True


def _load():
    errors = []
    for path, chosen in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            continue
        # A path the user named, or the loader's own search, is theirs to trust; a file
        # found next to this package is checked, and the file checked is the one loaded.
        fd = None
        if not chosen:
            try:
                fd, why = _open_checked(path)
            except OSError as e:
                fd, why = None, str(e)
            if fd is None:
                errors.append("%s: not loaded: %s" % (path, why))
                continue
        try:
            if fd is None:
                loaded = ctypes.CDLL(path)
            else:
                # Named by its path for the user (and ctypes' repr), loaded from the
                # descriptor that was checked.
                loaded = ctypes.CDLL(path, handle=ctypes.CDLL("/proc/self/fd/%d" % fd)._handle)
        except OSError as e:
            errors.append(str(e))
            continue
        finally:
            if fd is not None:
                os.close(fd)
        # A refused library beside the package is worth one line even when another copy
        # (an installed one) loads instead: the user meant this package's own.
        for refused in errors:
            sys.stderr.write("trainctl: %s; loaded %s instead\n" % (refused, path))
        return loaded
    raise ImportError(
        "trainctl: cannot find libtrainctl.so.0 (set TRAINCTL_LIBRARY to its path); tried: "
        + "; ".join(errors or ["the install and build layouts next to this package"]))


_lib = None

# The library's lines (trainctl_set_log_fn): to the logger "trainctl" once the program
# has configured logging (the line without "trainctl: "; level INFO for an exit or save
# decided, WARNING otherwise), else to stderr as the library writes them itself, so a job
# log that configured nothing still shows them.
_LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


def _to_logging(level, line, _user):
    try:
        text = line.decode(errors="replace")
        log = logging.getLogger("trainctl")
        if log.hasHandlers():
            log.log(level, text)
        else:
            sys.stderr.write("trainctl: %s\n" % text)
    except Exception:  # never into the library's thread
        pass


# Kept for the life of the process: the library may call it from any of its threads.
_log_fn = _LOG_FN(_to_logging)


def lib():
    """The loaded library with its prototypes; loaded on first use, not at import."""
    global _lib
    if _lib is not None:
        return _lib
    L = _load()
    P, I, C, D = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_double
    I64, SZ = ctypes.c_int64, ctypes.c_size_t
    vec = ctypes.POINTER(I64)
    protos = {
        "trainctl_version": (I, []),
        "trainctl_strerror": (C, [I]),
        "trainctl_last_error": (C, []),
        "trainctl_config_create": (I, [ctypes.POINTER(P)]),
        "trainctl_config_destroy": (None, [P]),
        "trainctl_config_set": (I, [P, C, C]),
        "trainctl_config_get": (I, [P, C, C, SZ]),
        "trainctl_create": (I, [P, ctypes.POINTER(P)]),
        "trainctl_destroy": (None, [P]),
        "trainctl_should_exit": (I, [P]),
        "trainctl_should_save": (I, [P]),
        "trainctl_check": (I, [P, I64, P, P]),  # called with no reduction only
        "trainctl_vote": (I, [P, I64, vec, SZ]),
        "trainctl_decide": (I, [P, I64, vec, SZ]),
        "trainctl_exit_reason": (C, [P]),
        "trainctl_save_reason": (C, [P]),
        "trainctl_set_deadline": (I, [P, D]),
        "trainctl_add_switch": (I, [P, I, C, C]),
        "trainctl_set_rank": (I, [P, I]),
        "trainctl_check_every": (I, [P]),
        "trainctl_compute_begin": (I, [P]),
        "trainctl_compute_end": (I, [P]),
        "trainctl_phase_begin": (I, [P, C]),
        "trainctl_phase_end": (I, [P]),
        "trainctl_state_path": (C, [P]),
        "trainctl_stat_calls": (ctypes.c_uint64, [P]),
    }
    for name, (res, args) in protos.items():
        fn = getattr(L, name)
        fn.restype = res
        fn.argtypes = args
    set_log = getattr(L, "trainctl_set_log_fn", None)  # absent before 0.1.1: stderr only
    if set_log is not None:
        set_log.restype, set_log.argtypes = I, [_LOG_FN, P]
        set_log(_log_fn, None)
        # Back to stderr before the interpreter goes: a line from the library's watcher thread
        # must not call into a Python being torn down. _LOG_FN() is the NULL function
        # pointer: ctypes refuses None for a CFUNCTYPE argument.
        atexit.register(set_log, _LOG_FN(), None)
    _lib = L
    return L


# Functions newer than the library's first release: bound when first used, so that the
# package still loads an older libtrainctl.so.0 and says what it lacks only when asked.
_OPTIONAL = {
    "trainctl_saved": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p]),
    "trainctl_resume_path": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
    "trainctl_note_error": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    "trainctl_save_begin": (ctypes.c_int64, [ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p]),
    "trainctl_save_end": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p]),
    "trainctl_save_starts": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p]),
    "trainctl_wait_saves": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_double]),
    "trainctl_pending_saves": (ctypes.c_int, [ctypes.c_void_p]),
    "trainctl_snapshot": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_size_t,
                                         ctypes.c_char_p]),
}
ESYSTEM = -2  # TRAINCTL_ESYSTEM: a system call failed (saved(): the marker could not be written)


def optional(name):
    """The library's function `name` (in _OPTIONAL), or TrainctlError naming the version
    that has it when the loaded library is older."""
    fn = getattr(lib(), name, None)
    if fn is None:
        n = lib().trainctl_version()
        raise TrainctlError(_EINTERNAL, "trainctl: the loaded libtrainctl (%d.%d.%d) has no %s: install the library "
                            "that came with this package" % (n // 10000, n // 100 % 100, n % 100, name))
    fn.restype, fn.argtypes = _OPTIONAL[name]
    return fn


def check(rc):
    """Turns a negative return code into an exception carrying the library's message."""
    if rc >= 0:
        return rc
    message = lib().trainctl_last_error().decode(errors="replace") or lib().trainctl_strerror(rc).decode()
    if rc == _EINVAL:
        raise ValueError(message)
    raise TrainctlError(rc, message)
