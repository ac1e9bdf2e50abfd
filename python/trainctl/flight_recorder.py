"""PyTorch's flight recorder, dumped on the supervisor's request during a hang.

torch records every collective of a process group (sequence number, op, sizes, the Python
stack that issued it) in a ring buffer when TORCH_FR_BUFFER_SIZE is set, which the
supervisor does for the ranks it starts. Only the rank itself can read that buffer for
gloo, and its main thread is the one that hangs: so a daemon thread waits on a FIFO
(fr.<pid>.pipe) in the rank's private node-state directory, and on each request writes

- fr.<pid>.pkl: torch's own dump, the format of torch's analyzer (fr_trace);
- fr.<pid>.txt: one line per process group, the newest collective this rank entered:
  ``pg=0 seq=1234 done=0 op=all_reduce at=? in=float32 x 4,194,304`` (``at``: the
  program's line, where torch recorded stacks; ``?`` when not)
  or one line ``none WHY`` when there is nothing to read.

Both are written under a temporary name and renamed, so the supervisor reads whole files
only. The thread needs the GIL, which a rank blocked in a collective has released.
Started once per process, by the first check() that agrees through torch.distributed."""

import os
import stat
import sys
import threading

_STARTED = False
_LOCK = threading.Lock()
_HERE = os.path.dirname(os.path.abspath(__file__))

# torch's dtype names in the recorder ("Float") as users write them (torch.float32).
_DTYPES = {"Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16", "Long": "int64",
           "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8", "Bool": "bool"}


def start(state_path, dist):
    """Listens for the supervisor's dump requests beside `state_path`, once per process."""
    global _STARTED
    with _LOCK:
        if _STARTED or not state_path or not state_path.startswith("/"):
            return
        _STARTED = True
    directory = os.path.dirname(state_path)
    pipe = os.path.join(directory, "fr.%d.pipe" % os.getpid())
    try:
        if _own_fifo(pipe) is False:
            os.unlink(pipe)  # this user's leftover of another kind: this process's name
        if _own_fifo(pipe) is None:
            os.mkfifo(pipe, 0o600)
    except OSError as e:
        sys.stderr.write("trainctl: cannot make %s (%s): no flight recorder dump on a hang\n" % (pipe, e))
        return
    import atexit
    atexit.register(_remove, directory)
    threading.Thread(target=_listen, args=(pipe, directory, dist), name="trainctl-flight-recorder",
                     daemon=True).start()


def _own_fifo(path):
    """True: this user's FIFO; False: something else of this user's; None: nothing there.
    Raises OSError for another user's file (never ours to remove)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if st.st_uid != os.getuid():
        raise OSError("owned by uid %d" % st.st_uid)
    return stat.S_ISFIFO(st.st_mode)


def _remove(directory):
    for suffix in ("pipe", "pkl", "txt"):
        try:
            os.unlink(os.path.join(directory, "fr.%d.%s" % (os.getpid(), suffix)))
        except OSError:
            pass


def _listen(pipe, directory, dist):
    while True:
        try:
            fd = os.open(pipe, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)  # waits for a writer
            try:
                os.read(fd, 64)
            finally:
                os.close(fd)
        except OSError:
            return  # the directory went with the job
        try:
            raw, digest = _dump(dist)
        except Exception as e:  # noqa: BLE001 - said in the digest, the rank goes on
            raw, digest = None, "none the dump failed: %s" % str(e).replace("\n", " ")[:200]
        if raw is not None:
            _write(directory, "pkl", raw)
        _write(directory, "txt", (digest + "\n").encode())


def _write(directory, suffix, data):
    name = "fr.%d.%s" % (os.getpid(), suffix)
    tmp = os.path.join(directory, name + ".tmp")
    try:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.rename(tmp, os.path.join(directory, name))
    except OSError as e:
        sys.stderr.write("trainctl: cannot write %s in %s: %s\n" % (name, directory, e))


def _dump(dist):
    """torch's dump (pickled) and this rank's digest of it."""
    import pickle
    torch = sys.modules["torch"]  # imported: torch.distributed is initialised
    c10d = torch._C._distributed_c10d
    nccl = dist.get_backend() == "nccl"
    dump = getattr(c10d, "_dump_nccl_trace" if nccl else "_dump_fr_trace", None)
    if dump is None:
        return None, "none torch %s has no flight recorder for %s" % (torch.__version__, dist.get_backend())
    # Collectives, not only the active ones; no stack traces: torch imports hundreds of
    # modules (1.5 CPU-s) for them on the first dump, and the supervisor takes the
    # program's frame from the Python stacks instead.
    raw = dump(True, False, False)
    trace = pickle.loads(raw)
    entries = trace.get("entries", [])
    if _name_groups(trace, dist):
        raw = pickle.dumps(trace)
    if not entries:
        size = os.environ.get("TORCH_FR_BUFFER_SIZE") or os.environ.get("TORCH_NCCL_TRACE_BUFFER_SIZE") or "0"
        return raw, ("none no collective recorded (TORCH_FR_BUFFER_SIZE=%s)" % size if size.strip() in ("", "0")
                     else "none no collective recorded yet")
    return raw, "\n".join(digest_lines(entries))


def _name_groups(trace, dist):
    """Fills in the process-group table (pg_config) of torch's dump where torch left a
    group's row nameless (gloo's, in torch 2.14), so that torch's analyzer (fr_trace) can
    match the entries, which name their group, with its members. True when it changed."""
    named = {}
    for e in trace.get("entries", []):
        pg = e.get("process_group")
        if pg:
            named[str(pg[0])] = str(pg[1]) if len(pg) > 1 else ""
    config = trace.get("pg_config")
    if not isinstance(config, dict) or all(name in config for name in named):
        return False
    try:
        groups = {name: group for group, name in dist.distributed_c10d._world.pg_names.items()}
        for name, desc in named.items():
            if name not in config and name in groups:
                config[name] = {"name": name, "desc": desc, "ranks": str(dist.get_process_group_ranks(groups[name]))}
    except Exception:  # noqa: BLE001 - torch's internals moved: the dump stays as torch wrote it
        return False
    if "" in config and config[""].get("name") == "":
        del config[""]  # torch's nameless row of a group named above
    return True


def digest_lines(entries):
    """The newest collective of each process group, one line each (see the module's doc)."""
    newest = {}
    for e in entries:
        if e.get("is_p2p"):
            continue
        pg = e.get("pg_id", 0)
        if pg not in newest or e.get("collective_seq_id", 0) >= newest[pg].get("collective_seq_id", 0):
            newest[pg] = e
    lines = []
    for pg in sorted(newest):
        e = newest[pg]
        op = str(e.get("profiling_name", "?")).split(":")[-1]
        lines.append("pg=%d seq=%d done=%d op=%s at=%s in=%s" % (
            int(pg), int(e.get("collective_seq_id", 0)), 1 if e.get("retired") else 0, _word(op),
            _issued_at(e.get("frames") or []), _tensors(e.get("input_dtypes") or [], e.get("input_sizes") or [])))
    return lines


def _word(text):
    return "".join(c if c.isprintable() and not c.isspace() else "_" for c in str(text))[:80] or "?"


def _issued_at(frames):
    """The innermost frame outside torch and trainctl: the program's line that issued it."""
    for f in frames:
        path = str(f.get("filename", ""))
        if "/torch/" in path or os.path.dirname(os.path.abspath(path)) == _HERE:
            continue
        return _word("%s:%s" % (os.path.basename(path), f.get("line", "?")))
    return "?"


def _tensors(dtypes, sizes):
    parts = []
    for dtype, shape in zip(dtypes, sizes):
        n = 1
        for d in shape:
            n *= int(d)
        parts.append("%s x %s" % (_DTYPES.get(dtype, _word(dtype)), "{:,}".format(n)))
    return " + ".join(parts) or "nothing"
