"""A rank for the notice benchmark: polls trainctl every millisecond and records the
moment it first sees an exit request (unix seconds) in OUT_DIR/<node>.<pid>."""

import os
import sys
import time

import trainctl

out_dir = sys.argv[1]
ctl = trainctl.Controller()
name = "%s.%d" % (os.environ.get("SLURMD_NODENAME", "local"), os.getpid())
open(os.path.join(out_dir, name + ".ready"), "w").close()
end = time.time() + float(sys.argv[2] if len(sys.argv) > 2 else 120)
while time.time() < end:
    if ctl.should_exit():
        seen = time.time()
        with open(os.path.join(out_dir, name + ".seen"), "w") as f:
            f.write("%.6f %s\n" % (seen, ctl.check(0).reason))
        break
    time.sleep(0.001)
