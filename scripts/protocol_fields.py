#!/usr/bin/env python3
"""One door per concern of the node state: a field of a concern that has its typed home in
protocol/ is read and written only there (its rules, who writes, who reads and in what
order, are code beside it), never with a raw atomic .load/.store elsewhere: not in the
library, the supervisor or the CLI, and not in protocol/'s other files either (the file
class, the publisher, the sweep go through the homes too).

    python3 scripts/protocol_fields.py [FILE...]     # default: the product files git tracks

Prints one line per raw access outside the concern's home and exits 1, else a one-line
summary and exits 0.
"""
import re
import subprocess
import sys

# concern -> (its home, the fields of node_state it owns, as they are written after a '.').
# A name two concerns' structs share (a slot's state, a step) may be used in either home.
CONCERNS = {
    "notices": ("protocol/notice_fields", ["flags", "seq"]),
    "publisher role": ("protocol/publisher_fields",
                       ["publisher_id", "published_ms", "publish_every_ms", "supervised", "stat_calls"]),
    "deadline": ("protocol/deadline_fields", ["deadline_ms", "end_ms", "end_read_ms"]),
    "switches": ("protocol/switch_fields", ["state", "token", "count", "save_max"]),
    "heartbeats and phases": ("protocol/beat_fields",
                              ["pid", "rank", "step", "beat_ms", "step_us", "slow", "exiting", "phase", "phase_ms",
                               "state", "longest_ms", "longest_save_ms", "longest_quiet_ms"]),
    "stragglers": ("protocol/straggler_fields",
                   ["reports", "step", "slow_us", "fastest_us", "timed_steps", "total_us", "slowest_total_us",
                    "work_marked"]),
    "saves and commits": ("protocol/save_fields",
                          ["asked_step1", "asked_ms", "committed_step1", "committed_ms", "pending_step1",
                           "pending_ms", "pending", "waiting"]),
    "breaker": ("protocol/breaker_fields", [r"breaker\s*\.\s*step1", r"breaker\s*\.\s*runs"]),
    "errors": ("protocol/error_fields", ["error_len"]),
}
SOURCE = re.compile(r"\.(c|h|cpp|hpp)$")
NOT_PRODUCT = re.compile(r"^(tests|bench|debian|packaging|build[^/]*)/")
ATOMIC = r"\s*\.\s*(?:load|store|exchange|compare_exchange_weak|compare_exchange_strong|fetch_\w+)\s*\("


def main(argv):
    files = argv or subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    files = [f for f in files if SOURCE.search(f) and not NOT_PRODUCT.search(f)]
    homes = {}
    for concern, (home, fields) in CONCERNS.items():
        for field in fields:
            homes.setdefault(field, []).append((concern, home))
    rules = [(owners, field, re.compile(r"(?<![\w])" + field + ATOMIC)) for field, owners in homes.items()]
    problems = []
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as src:
            for n, line in enumerate(src, 1):
                code = line.split("//", 1)[0]
                for owners, field, raw in rules:
                    if raw.search(code) and not any(f.startswith(home + ".") for _, home in owners):
                        name = field.replace(r"\s*", "").replace("\\.", ".")
                        where = " or ".join(f"{home}.hpp ({concern})" for concern, home in owners)
                        problems.append(f"{f}:{n}: the node state's {name} read or written raw: use {where}")
    for p in problems:
        print(f"protocol_fields: {p}")
    if problems:
        return 1
    print(f"protocol_fields: the node state's fields ({', '.join(CONCERNS)}) only through their homes in protocol/ "
          f"({len(files)} product files)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
