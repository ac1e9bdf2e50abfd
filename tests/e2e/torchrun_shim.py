"""Runs Debian's torchrun (or `accelerate launch`, given --accelerate first) in the tests.

Two faults of Debian's torch that a real part cannot avoid, mended in this process only:

- torch 1.13 on Python 3.11: Std.from_str("0") returns None because iterating an IntFlag
  skips the zero member, so `torchrun` dies parsing its own default --redirects=0.
- torch >= 2.4 built without libuv (Debian's): the elastic rendezvous (static and c10d)
  creates its TCPStore with use_libuv left at its default, True, so the agent hosting the
  store fails ("use_libuv was requested but PyTorch was built without libuv support").
  USE_LIBUV=0 is PyTorch's switch, but the rendezvous and the ranks' client of the
  agent's store ignore it until pytorch PR 196855 (issue 178600): the shim sets it and
  puts torch_compat/ first on PYTHONPATH, whose sitecustomize makes them honour it in
  the agent and in every rank.
"""

import os
import runpy
import sys

from torch.distributed.elastic.multiprocessing import api


_original = api.Std.from_str.__func__ if hasattr(api.Std.from_str, "__func__") else None


def _from_str(cls, vm):
    if vm.strip() == "0":
        return api.Std.NONE
    return _original(cls, vm) if _original else api.Std(int(vm))


api.Std.from_str = classmethod(_from_str)


# Debian's torch >= 2.4 has no libuv: the agent and the ranks use the legacy store.
_compat = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_compat")
os.environ.setdefault("USE_LIBUV", "0")
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_compat, os.environ.get("PYTHONPATH")) if p)
runpy.run_path(os.path.join(_compat, "sitecustomize.py"))  # this process started before that

if __name__ == "__main__":
    if sys.argv[1:2] == ["--accelerate"]:
        from accelerate.commands.accelerate_cli import main as accelerate_main

        sys.argv = ["accelerate"] + sys.argv[2:]
        sys.exit(accelerate_main())
    from torch.distributed.run import main

    sys.exit(main())
