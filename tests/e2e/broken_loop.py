#!/usr/bin/env python3
"""slurm_templates/train_example.py with one thing broken, as trainctl drill must find it
(BROKEN names which; the example's own arguments follow as the template gives them):

    never-resumes   each task saves to a checkpoint directory of its own, so it never
                    finds the last task's save (a loop that ignores trainctl.resume_path)
    unmarked-eval   ctl.phase("eval") marks nothing: a long evaluation is just a long
                    time between check() calls
    no-check        the loop never calls trainctl: it only sleeps
"""
import contextlib
import importlib.util
import os
import sys
import time

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "slurm_templates", "train_example.py")


def main(group=None):
    """As the example's main(group=...): light_rank.py hands the launcher's group here too."""
    broken = os.environ.get("BROKEN", "")
    if broken == "no-check":
        while True:
            time.sleep(1)
    spec = importlib.util.spec_from_file_location("train_example", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    if broken == "never-resumes":
        i = sys.argv.index("--ckpt-dir")
        sys.argv[i + 1] = os.path.join(sys.argv[i + 1], os.environ["SLURM_JOB_ID"])
    elif broken == "unmarked-eval":
        marked = example.trainctl.Controller.phase
        example.trainctl.Controller.phase = lambda self, name: (contextlib.nullcontext() if name == "eval"
                                                                else marked(self, name))
    elif broken:
        sys.exit("broken_loop.py: BROKEN=%s; accepted: never-resumes, unmarked-eval, no-check" % broken)
    return example.main(group)


if __name__ == "__main__":
    sys.exit(main())
