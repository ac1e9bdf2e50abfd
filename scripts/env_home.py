#!/usr/bin/env python3
"""One home for the environment: product C and C++ read a variable through common/env.hpp
(env_text, env_or, env_set), never with getenv of their own, so that what a variable means
when unset or empty is decided in one place. The SLURM plugin's spank_getenv (the job's
environment, not the process's) is no getenv. The variables' names are written once, in
common/env_names.hpp: a read that spells a name as a literal (env_text("SLURM_JOB_ID"),
proc_environ_value(pid, "RANK")) fails as well.

    python3 scripts/env_home.py [FILE...]     # default: the product files git tracks

Prints one line per call elsewhere and exits 1, else a one-line summary and exits 0.
"""
import re
import subprocess
import sys

HOME = "common/env.hpp"
SOURCE = re.compile(r"\.(c|h|cpp|hpp)$")
NOT_PRODUCT = re.compile(r"^(tests|bench|debian|packaging|build[^/]*)/")
CALL = re.compile(r"(?<![\w.>])(?:std::|::)?(?:secure_)?getenv\s*\(")
NAMES = "common/env_names.hpp"
LITERAL = re.compile(r"(?<![\w.>])(env_text|env_or|env_set|env|env_count|env_number|proc_environ_value\s*\([^,()]+,|environ_value\s*\([^,()]+,|job_env\s*\([^,()]+,|"
                     r"user_state_path)\s*\(?\s*\"([A-Z][A-Z0-9_]*)\"")


def main(argv):
    files = argv or subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    files = [f for f in files if SOURCE.search(f) and not NOT_PRODUCT.search(f) and not f.endswith(HOME)]
    problems = []
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as src:
            for n, line in enumerate(src, 1):
                code = line.split("//", 1)[0]
                if CALL.search(code):
                    problems.append(f"{f}:{n}: getenv outside {HOME}: use env_text, env_or or env_set")
                literal = LITERAL.search(code)
                if literal:
                    problems.append(f"{f}:{n}: {literal.group(2)} written as a literal: name it in {NAMES} "
                                    f"and read it as env_var::k...")
    for p in problems:
        print(f"env_home: {p}")
    if problems:
        return 1
    print(f"env_home: no getenv in {len(files)} product files outside {HOME}, no variable name outside {NAMES}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
