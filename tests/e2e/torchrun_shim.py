"""Runs Debian's torchrun (torch 1.13) on Python 3.11.

torch 1.13's Std.from_str("0") returns None on 3.11 because iterating an IntFlag
skips the zero member, so `torchrun` dies parsing its own default --redirects=0.
This shim fixes that one function and then runs torchrun's own main().
"""

import sys

from torch.distributed.elastic.multiprocessing import api


_original = api.Std.from_str.__func__ if hasattr(api.Std.from_str, "__func__") else None


def _from_str(cls, vm):
    if vm.strip() == "0":
        return api.Std.NONE
    return _original(cls, vm) if _original else api.Std(int(vm))


api.Std.from_str = classmethod(_from_str)

from torch.distributed.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
