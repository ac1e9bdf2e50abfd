"""Snapshots in host memory (Controller.snapshot): the state made into bytes, and a
snapshot written out by the supervisor read back (load_snapshot)."""

import io
import os
import pickle
import stat
import sys
from typing import Any, Optional, Union

# What the bytes hold, before them: the library keeps the bytes as given.
_TORCH = b"trainctl-snapshot torch\n"
_PICKLE = b"trainctl-snapshot pickle\n"


def to_bytes(state: Any) -> io.BytesIO:
    """The state as bytes with its kind in front: torch.save when torch is loaded (a
    state dict of tensors, copied to host memory), else pickle."""
    buf = io.BytesIO()
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "save"):
        buf.write(_TORCH)
        torch.save(state, buf)
    else:
        buf.write(_PICKLE)
        pickle.dump(state, buf, protocol=pickle.HIGHEST_PROTOCOL)
    return buf


def snapshot(self: Any, step: int, state: Any, ckpt_dir: Union[str, "os.PathLike[str]"]) -> bool:
    """Controller.snapshot(): the state's bytes handed to the library without another copy."""
    ctl = self._ctl
    if ctl is None:
        raise ValueError("trainctl: this Controller is closed")
    import ctypes
    from . import _native
    buf = to_bytes(state)
    view = buf.getbuffer()
    try:
        data = (ctypes.c_char * len(view)).from_buffer(view)
        directory = os.fsencode(os.path.abspath(os.fsdecode(ckpt_dir)))
        rc = _native.optional("trainctl_snapshot")(ctl, int(step), data, len(view), directory)
        del data
    finally:
        view.release()
    if rc == _native.ESYSTEM:  # said in the log by the library
        return False
    _native.check(rc)
    return True


def _rank() -> int:
    for name in ("RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


def _file_of(path: Union[str, "os.PathLike[str]"], rank: Optional[int]) -> str:
    return os.path.join(os.fsdecode(path), "rank-%d.snapshot" % (_rank() if rank is None else rank))


def is_snapshot(path: Union[str, "os.PathLike[str]", None]) -> bool:
    """Whether `path` (what resume_path() returned) is a snapshot the supervisor wrote
    out, to be read with load_snapshot(), rather than a save of the loop's own."""
    if not path:
        return False
    return os.path.basename(os.fsdecode(path).rstrip("/")).startswith("snapshot-") and os.path.isfile(
        _file_of(path, None))


def load_snapshot(path: Union[str, "os.PathLike[str]"], rank: Optional[int] = None,
                  map_location: Any = "cpu") -> Any:
    """This rank's state from the snapshot at `path` (what resume_path() returned when
    is_snapshot(path)): the object given to Controller.snapshot() at that step. `rank`:
    this process's rank by default (RANK, else the launcher's or SLURM's). Reads only a
    regular file of this user's, through no link; ValueError otherwise, or when the file
    is not a snapshot."""
    name = _file_of(path, rank)
    # No link followed, and no FIFO waited on (a teammate's, in a shared directory).
    fd = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise ValueError("trainctl: load_snapshot(): %s is not a file of this user's" % name)
        data = f.read()
    if data.startswith(_PICKLE):
        return pickle.loads(data[len(_PICKLE):])
    if data.startswith(_TORCH):
        import torch
        stream = io.BytesIO(data[len(_TORCH):])
        try:  # the whole object, as snapshot() was given it (torch 2.6+ loads only tensors by default)
            return torch.load(stream, map_location=map_location, weights_only=False)
        except TypeError:  # a torch before 1.13, without weights_only
            stream.seek(0)
            return torch.load(stream, map_location=map_location)
    raise ValueError("trainctl: load_snapshot(): %s is no snapshot of Controller.snapshot()'s" % name)
