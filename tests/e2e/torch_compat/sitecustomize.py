"""Makes Debian's torch >= 2.4 (built without libuv) honour USE_LIBUV=0 in this process.

Imported by Python at start in every process below tests/e2e/torchrun_shim.py (the
shim puts this directory first on PYTHONPATH): the launcher's agent and the ranks. A
mend of a fault a real part cannot avoid, for the tests only: torch's elastic rendezvous
(the agent's store) and init_process_group under torchrun (the ranks' client of that
store) create their TCPStore with use_libuv left at its default, True, and a torch built
without libuv refuses that, even as a client. USE_LIBUV=0 is PyTorch's switch, which
those calls ignore until pytorch PR 196855 (issue 178600); here they honour it.

It also counts the test command's torch processes: on PYTHONPATH in every e2e test
(tests/e2e/lib.sh), it appends a line to the file $TRAINCTL_E2E_TORCH_COUNT names, where
set, in each process that imports torch.
"""

import importlib
import os
import sys


class _CountTorch:
    """A finder that finds nothing: it notes the first import of torch, then leaves."""

    def find_spec(self, name, path=None, target=None):
        if name == "torch":
            sys.meta_path.remove(self)
            try:
                fd = os.open(os.environ["TRAINCTL_E2E_TORCH_COUNT"], os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
                try:
                    os.write(fd, ("%d %s\n" % (os.getpid(), os.path.basename(sys.argv[0] if sys.argv else "?"))).encode())
                finally:
                    os.close(fd)
            except (KeyError, OSError):
                pass
        return None


if os.environ.get("TRAINCTL_E2E_TORCH_COUNT"):
    sys.meta_path.insert(0, _CountTorch())


def _honour_use_libuv():
    if os.environ.get("USE_LIBUV") != "0":
        return
    try:
        import torch.distributed as dist
    except ImportError:
        return
    if not dist.is_available() or "use_libuv" not in (dist.TCPStore.__init__.__doc__ or ""):
        return  # torch before 2.4 has no libuv store to turn off

    class TCPStore(dist.TCPStore):
        def __init__(self, *args, **kwargs):
            kwargs.setdefault("use_libuv", False)
            super().__init__(*args, **kwargs)

    # By module name: torch.distributed.rendezvous is also the name of a function there.
    for name in (
        "torch.distributed",
        "torch.distributed.rendezvous",
        "torch.distributed.elastic.rendezvous.c10d_rendezvous_backend",
        "torch.distributed.elastic.rendezvous.static_tcp_rendezvous",
    ):
        importlib.import_module(name).TCPStore = TCPStore


_honour_use_libuv()
