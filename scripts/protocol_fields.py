#!/usr/bin/env python3
"""One door per concern of the node state: a field of a concern that has its typed home in
protocol/ is read and written only there (its rules, who writes, who reads and in what
order, are code beside it), never with a raw atomic .load/.store elsewhere. A concern
joins the table below when its home is made; the rest of the node state follows.

    python3 scripts/protocol_fields.py [FILE...]     # default: the product files git tracks

Prints one line per raw access outside the concern's home and exits 1, else a one-line
summary and exits 0.
"""
import re
import subprocess
import sys

# concern -> (its home, the fields of node_state it owns, as they are written after a '.')
CONCERNS = {
    "deadline": ("protocol/deadline_fields", ["deadline_ms", "end_ms", "end_read_ms"]),
    "breaker": ("protocol/breaker_fields", [r"breaker\s*\.\s*step1", r"breaker\s*\.\s*runs"]),
}
SOURCE = re.compile(r"\.(c|h|cpp|hpp)$")
NOT_PRODUCT = re.compile(r"^(tests|bench|debian|packaging|build[^/]*)/")
ATOMIC = r"\s*\.\s*(?:load|store|exchange|compare_exchange_weak|compare_exchange_strong|fetch_\w+)\s*\("


def main(argv):
    files = argv or subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    files = [f for f in files if SOURCE.search(f) and not NOT_PRODUCT.search(f)]
    rules = [(concern, home, field, re.compile(r"(?<![\w])" + field + ATOMIC))
             for concern, (home, fields) in CONCERNS.items() for field in fields]
    problems = []
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as src:
            for n, line in enumerate(src, 1):
                code = line.split("//", 1)[0]
                for concern, home, field, raw in rules:
                    if raw.search(code) and not f.startswith(home + "."):
                        name = field.replace(r"\s*", "").replace("\\.", ".")
                        problems.append(f"{f}:{n}: the node state's {name} ({concern}) read or written raw: "
                                        f"use {home}.hpp")
    for p in problems:
        print(f"protocol_fields: {p}")
    if problems:
        return 1
    print(f"protocol_fields: the {', '.join(CONCERNS)} fields only through their homes in protocol/ "
          f"({len(files)} product files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
