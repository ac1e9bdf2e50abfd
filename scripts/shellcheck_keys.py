#!/usr/bin/env python3
"""scripts/lint's cache of shellcheck's verdicts: which shell files need checking.

Usage: shellcheck_keys.py SHELLCHECK_VERSION FILE...   (paths relative to the checkout,
run from its top)

Prints, for every FILE, a line "KEY FILE". KEY hashes everything `shellcheck -x` reads
for that file: the file, every file it sources that shellcheck follows (a
"# shellcheck source=PATH" directive, or `source`/`.` of a literal path from the top),
transitively, .shellcheckrc where there is one, and shellcheck's version. The paths go in
as given, relative, so another clone of the same files has the same keys. A file whose key
shellcheck passed before needs no second look (scripts/lint keeps the passed keys).
"""

import hashlib
import os
import re
import sys

# "# shellcheck source=tests/e2e/lib.sh", "source scripts/lib.sh", ". scripts/lib.sh"
DIRECTIVE = re.compile(r"^\s*#\s*shellcheck\s+.*\bsource=(\S+)")
LITERAL = re.compile(r"^\s*(?:source|\.)\s+([A-Za-z0-9_./-]+)\s*(?:#.*)?$")


def sourced(path):
    """The files PATH names for shellcheck to follow, as they exist from the top."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return []
    found = []
    for line in lines:
        m = DIRECTIVE.match(line) or LITERAL.match(line)
        if m and m.group(1) != "/dev/null" and os.path.isfile(m.group(1)):
            found.append(os.path.normpath(m.group(1)))
    return found


def key(path, common):
    h = hashlib.sha256(common)
    seen, todo = set(), [path]
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        todo.extend(sourced(p))
    for p in sorted(seen):
        h.update(b"\0" + p.encode() + b"\0")
        try:
            with open(p, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
        except OSError:
            return "unread-" + os.urandom(8).hex()  # never a passed key: always checked
    return h.hexdigest()


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    common = hashlib.sha256(argv[1].encode())
    if os.path.isfile(".shellcheckrc"):
        with open(".shellcheckrc", "rb") as f:
            common.update(f.read())
    for path in argv[2:]:
        print(key(path, common.digest()), path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
