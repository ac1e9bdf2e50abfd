"""ctypes binding of trainctl.h. Thin on purpose: the logic lives in the C library."""

import ctypes
import os
import platform
import sys
import sysconfig

VOTE_LEN = 24
EXIT = 1
SAVE = 2
SWITCH_EXIT = 1
SWITCH_SAVE = 2
_EINVAL = -1
EREDUCE = -4  # TRAINCTL_EREDUCE: the reduction failed


class TrainctlError(RuntimeError):
    """A libtrainctl call failed; the message is the library's one-line reason."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _untrusted(path):
    """Why a library found next to this package must not be loaded ('' when it may). It
    runs as the user: the file and the directory it sits in must belong to root or to
    this user, and nobody else may write either; every directory above must belong to
    root or this user and be writable by nobody else, except a root-owned sticky one
    such as /tmp (where others cannot rename what is not theirs). Anything else could
    have been planted or swapped by another user of the machine."""
    me = os.getuid()
    real = os.path.realpath(path)
    st = os.lstat(real)
    if st.st_uid not in (0, me):
        return "%s belongs to uid %d, not to you or root" % (real, st.st_uid)
    if st.st_mode & 0o022:
        return "%s is writable by others (mode %04o)" % (real, st.st_mode & 0o7777)
    d = os.path.dirname(real)
    first = True
    while True:
        s = os.stat(d)
        if s.st_uid not in (0, me):
            return "its directory %s belongs to uid %d, not to you or root" % (d, s.st_uid)
        sticky_root = s.st_uid == 0 and s.st_mode & 0o1000
        if s.st_mode & 0o022 and (first or not sticky_root):
            return "its directory %s is writable by others (mode %04o)" % (d, s.st_mode & 0o7777)
        first = False
        if d == os.path.dirname(d):
            break
        d = os.path.dirname(d)
    return ""


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
        # found next to this package is checked first.
        why = "" if chosen else _untrusted(path)
        if why:
            errors.append("%s: not loaded: %s" % (path, why))
            continue
        try:
            loaded = ctypes.CDLL(path)
        except OSError as e:
            errors.append(str(e))
            continue
        # A refused library beside the package is worth one line even when another copy
        # (an installed one) loads instead: the user meant this package's own.
        for refused in errors:
            sys.stderr.write("trainctl: %s; loaded %s instead\n" % (refused, path))
        return loaded
    raise ImportError(
        "trainctl: cannot find libtrainctl.so.0 (set TRAINCTL_LIBRARY to its path); tried: "
        + "; ".join(errors or ["the install and build layouts next to this package"]))


_lib = None


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
        "trainctl_state_path": (C, [P]),
        "trainctl_stat_calls": (ctypes.c_uint64, [P]),
    }
    for name, (res, args) in protos.items():
        fn = getattr(L, name)
        fn.restype = res
        fn.argtypes = args
    _lib = L
    return L


def check(rc):
    """Turns a negative return code into an exception carrying the library's message."""
    if rc >= 0:
        return rc
    message = lib().trainctl_last_error().decode(errors="replace") or lib().trainctl_strerror(rc).decode()
    if rc == _EINVAL:
        raise ValueError(message)
    raise TrainctlError(rc, message)
