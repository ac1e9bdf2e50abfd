"""ctypes binding of trainctl.h. Thin on purpose: the logic lives in the C library."""

import ctypes
import os
import platform
import sysconfig

VOTE_LEN = 24
EXIT = 1
SAVE = 2
SWITCH_EXIT = 1
SWITCH_SAVE = 2
_EINVAL = -1


class TrainctlError(RuntimeError):
    """A libtrainctl call failed; the message is the library's one-line reason."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code


def _candidates():
    env = os.environ.get("TRAINCTL_LIBRARY")
    if env:
        yield env
    here = os.path.dirname(os.path.abspath(__file__))
    # Debian's multiarch directory (lib/x86_64-linux-gnu), where a /usr install puts it.
    arch = sysconfig.get_config_var("MULTIARCH") or "%s-linux-gnu" % platform.machine()
    # <prefix>/lib/python3/dist-packages/trainctl -> <prefix>/lib (install and build trees)
    for up in (3, 4):
        lib = os.path.normpath(os.path.join(here, *([".."] * up)))
        yield os.path.join(lib, "libtrainctl.so.0")
        yield os.path.join(lib, arch, "libtrainctl.so.0")
    yield "libtrainctl.so.0"


def _load():
    errors = []
    for path in _candidates():
        if os.path.sep in path and not os.path.exists(path):
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append(str(e))
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
        "trainctl_vote": (I, [P, I64, vec, SZ]),
        "trainctl_decide": (I, [P, I64, vec, SZ]),
        "trainctl_exit_reason": (C, [P]),
        "trainctl_save_reason": (C, [P]),
        "trainctl_set_deadline": (I, [P, D]),
        "trainctl_add_switch": (I, [P, I, C, C]),
        "trainctl_set_rank": (I, [P, I]),
        "trainctl_check_every": (I, [P]),
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
