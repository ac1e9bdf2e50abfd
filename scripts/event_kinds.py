#!/usr/bin/env python3
"""One table of run-event kinds: product C and C++ name a kind of run event through
common/run_event_kinds.hpp (run_event_kind::kFirstStep), never as a literal, so that the
writers and the readers of the run-events file cannot drift apart: a kind written as
"firststep" by one side would be read as nothing by the other, silently. A kind compared
(e.what == "save"), set (e.what = "save", make_run_event("save", ...)) or noted
(note_event("save", ...)) as a literal fails.

    python3 scripts/event_kinds.py [FILE...]     # default: the product files git tracks

Prints one line per literal and exits 1, else a one-line summary and exits 0.
"""
import re
import subprocess
import sys

HOME = "common/run_event_kinds.hpp"
SOURCE = re.compile(r"\.(c|h|cpp|hpp)$")
NOT_PRODUCT = re.compile(r"^(tests|bench|debian|packaging|build[^/]*)/")
LITERAL = re.compile(r"(?:\bwhat\s*(?:==|!=|=)\s*|\b(?:make_run_event|note_event|note)\s*\(\s*)\"([a-z_]+)\"")


def main(argv):
    files = argv or subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    files = [f for f in files if SOURCE.search(f) and not NOT_PRODUCT.search(f) and not f.endswith(HOME)]
    problems = []
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as src:
            for n, line in enumerate(src, 1):
                code = line.split("//", 1)[0]
                for m in LITERAL.finditer(code):
                    problems.append(f'{f}:{n}: the run-event kind "{m.group(1)}" written as a literal: '
                                    f"use run_event_kind:: from {HOME}")
    if problems:
        print("\n".join(f"event_kinds: {p}" for p in problems))
        return 1
    print(f"event_kinds: every run-event kind named through {HOME} ({len(files)} product files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
