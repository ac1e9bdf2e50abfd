#!/usr/bin/env python3
"""The size rules of docs/style.md, checked: a product source file holds at most 600 lines, a
C++ class or struct at most 20 data members (one concern, a handful of fields), and a function
at most 80 lines (from its signature to its closing brace; a Python def likewise).

    python3 scripts/sizes.py [FILE...]     # default: the product files git tracks

Prints one line per file or class over its limit and exits 1, else a one-line summary and
exits 0. Product files are C, C++ and Python outside tests/, bench/ and packaging. A class's
data members are the declarations in its own body, not in nested classes or functions; a
reader of C++ by text, not a compiler: `--top N` lists the N largest classes and the N longest
functions to look at. A C++ function is one defined at the start of a line (clang-format puts
every function of a namespace there), its length counted in the file's own lines.
"""
import ast
import re
import subprocess
import sys

MAX_LINES = 600
MAX_MEMBERS = 20
MAX_FUNCTION_LINES = 80
PRODUCT = re.compile(r"\.(c|h|cpp|hpp|py)$")
NOT_PRODUCT = re.compile(r"^(tests|debian|packaging|build[^/]*)/")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)  # braces inside strings are no scopes


def body_at(text, start):
    """The text from `start` (just after a '{') to its matching '}', and the end index."""
    depth, i = 1, start
    while depth and i < len(text):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        i += 1
    return text[start:i - 1], i


def top_level(body):
    """`body` with every nested {...} block removed (functions, nested classes, initializers)."""
    out, depth = [], 0
    for ch in body:
        if ch == "{":
            depth += 1
            if depth == 1:
                out.append("{}")
            continue
        if ch == "}":
            depth -= 1
            continue
        if depth == 0:
            out.append(ch)
    return "".join(out)


SKIP = ("using ", "friend ", "static ", "typedef ", "enum ", "template", "#", "class ", "struct ", "union ")


def data_members(body):
    count = 0
    for decl in top_level(body).split(";"):
        decl = re.sub(r"\b(public|private|protected)\s*:", "", decl).strip()
        if not decl or decl.startswith(SKIP) or decl.startswith("~"):
            continue
        head = decl.split("=")[0].split("{}")[0]
        if "(" in head or "operator" in head:  # a function, a constructor, an operator
            continue
        # `int a, b;` is two members; commas inside <...> are not.
        count += 1 + re.sub(r"<[^<>]*>", "", re.sub(r"<[^<>]*>", "", head)).count(",")
    return count


def blank_comments(text):
    """Comments and string contents blanked, every newline kept: offsets still give lines."""
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(?:\\.|[^"\\\n])*"', '""', text)


# A definition at the start of a line: a name, its parameters, qualifiers, then the body.
DEFINITION = re.compile(r"^(?![ \t#}])[^\n;{}()]*?([A-Za-z_~][\w:~<>=!+\-*/\[\]]*)\s*\(([^;{}]*?)\)"
                        r"[^;{}()]*?\{", re.M)
NOT_FUNCTION = ("namespace", "struct", "class", "enum", "union", "extern", "if", "for", "while", "switch")


def functions(path):
    """(name, first line, lines) of each function defined in the file."""
    source = open(path, encoding="utf-8", errors="replace").read()
    if path.endswith(".py"):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield node.name, node.lineno, node.end_lineno - node.lineno + 1
        return
    text = blank_comments(source)
    for m in DEFINITION.finditer(text):
        if m.group(0).lstrip().startswith(NOT_FUNCTION) or m.group(1) in NOT_FUNCTION:
            continue
        _, end = body_at(text, m.end())
        first = text.count("\n", 0, m.start()) + 1
        yield m.group(1), first, text.count("\n", m.start(), end) + 1


def classes(path):
    text = strip_comments(open(path, encoding="utf-8", errors="replace").read())
    for m in re.finditer(r"\b(class|struct)\s+([A-Za-z_]\w*(?:::\w+)*)\s*(?:final\s*)?(?::[^;{()]*)?\{", text):
        body, _ = body_at(text, m.end())
        yield m.group(2), data_members(body)


def main(argv):
    top = 0
    if argv[:1] == ["--top"]:
        top, argv = int(argv[1]), argv[2:]
    files = argv or subprocess.run(["git", "ls-files"], capture_output=True, text=True, check=True).stdout.split()
    files = [f for f in files if PRODUCT.search(f) and not NOT_PRODUCT.search(f)]
    problems, found, long_ones = [], [], []
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as src:
            lines = sum(1 for _ in src)
        if lines > MAX_LINES:
            problems.append(f"{f} has {lines} lines (at most {MAX_LINES}: one concern per file; split it)")
        for name, first, n in functions(f):
            long_ones.append((n, f"{f}:{first}", name))
            if n > MAX_FUNCTION_LINES:
                problems.append(f"{f}:{first}: {name} is {n} lines (at most {MAX_FUNCTION_LINES}: name its steps "
                                "as functions of their own)")
        if f.endswith(".py"):
            continue
        for name, n in classes(f):
            found.append((n, f, name))
            if n > MAX_MEMBERS:
                problems.append(f"{f}: {name} has {n} data members (at most {MAX_MEMBERS}: the fields that only "
                                "some methods read are another class)")
    for n, f, name in sorted(found, reverse=True)[:top]:
        print(f"{n:3d} {name} ({f})")
    for n, where, name in sorted(long_ones, reverse=True)[:top]:
        print(f"{n:3d} lines {name} ({where})")
    for p in problems:
        print(f"sizes: {p}")
    if problems:
        return 1
    print(f"sizes: {len(files)} files within {MAX_LINES} lines, {len(found)} classes within {MAX_MEMBERS} members, "
          f"{len(long_ones)} functions within {MAX_FUNCTION_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
