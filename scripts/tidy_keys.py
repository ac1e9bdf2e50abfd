#!/usr/bin/env python3
"""scripts/lint's cache of clang-tidy's verdicts: which files need checking.

Usage: tidy_keys.py CHECKOUT COMPILE_COMMANDS FILE_REGEX TIDY_VERSION

Prints, for every source file in COMPILE_COMMANDS whose path matches FILE_REGEX, a line
"KEY PATH". KEY hashes everything clang-tidy reads of that file: the file and every
header the compiler lists for it (g++ -M, system headers too), its compile command with
the checkout's path taken out (so another clone of the same code has the same keys),
.clang-tidy and clang-tidy's version. A file whose key clang-tidy passed before needs no
second look (scripts/lint keeps the passed keys); a file whose dependencies cannot be
listed gets a key no run has passed, so it is always checked.
"""

import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys


def dependencies(entry):
    """The files the compiler reads for this entry, per g++ -M; None if it cannot say."""
    args = shlex.split(entry["command"])
    kept, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-c":
            kept.append(a)
    try:
        out = subprocess.run(kept + ["-M", "-MF", "/dev/stdout"], cwd=entry["directory"],
                             capture_output=True, text=True, timeout=120, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    # make's rule: "x.o: a.cpp b.h \<newline> c.h" (a path with a space in it is escaped
    # there, is then not found, and makes its file one that is always checked)
    _, colon, deps = out.replace("\\\n", " ").partition(":")
    return deps.split() if colon else None


def key(entry, checkout, common):
    deps = dependencies(entry)
    if deps is None:
        return "unlisted-" + os.urandom(8).hex()
    h = hashlib.sha256(common)
    h.update(entry["command"].replace(checkout, ".").encode())
    fulls = {os.path.normpath(os.path.join(entry["directory"], path)) for path in deps}
    for full in sorted(fulls, key=lambda f: f.replace(checkout, ".")):  # in the same order in any clone
        h.update(b"\0" + full.replace(checkout, ".").encode() + b"\0")
        try:
            with open(full, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
        except OSError:
            return "unlisted-" + os.urandom(8).hex()
    return h.hexdigest()


def main():
    checkout, commands, pattern, version = sys.argv[1:5]
    with open(commands) as f:
        entries = [e for e in json.load(f) if re.search(pattern, e["file"])]
    with open(os.path.join(checkout, ".clang-tidy"), "rb") as f:
        common = version.encode() + b"\0" + f.read()
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        keys = list(pool.map(lambda e: key(e, checkout, common), entries))
    # A file built by two targets is listed twice and checked once: its key covers both.
    by_file = {}
    for entry, k in zip(entries, keys):
        by_file.setdefault(entry["file"], []).append(k)
    for path, ks in by_file.items():
        unlisted = [k for k in ks if k.startswith("unlisted-")]
        print(unlisted[0] if unlisted else hashlib.sha256(" ".join(ks).encode()).hexdigest(), path)


if __name__ == "__main__":
    main()
