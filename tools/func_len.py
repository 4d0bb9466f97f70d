#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lists the C functions longer than a limit (default 120 lines) under host/.

    python3 tools/func_len.py [--max N] [FILE_OR_DIR ...]     (default: host)

A function's length counts every line from its opening brace to its closing
brace, both included; the line printed is the opening brace's. Prints
"file:line name length" for each function over the limit and exits 1 if there
is one, else 0 (silently). Stdlib only; C is scanned, not parsed: comments,
string and character literals and preprocessor lines are skipped, and a
top-level `{` whose preceding text ends in `)` opens a function body.
"""
import argparse
import os
import re
import sys

IDENT_BEFORE_PAREN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*$")


def strip_code(text):
    """text with comments, literals and preprocessor lines blanked out (newlines kept)."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line, with its continuations
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append("\n")
                    i += 2
                    continue
                i += 1
            continue
        line_start = False
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:j]))
            i = j
            continue
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + c)
            i = j + 1
            continue
        if c == "\n":
            line_start = True
        out.append(c)
        i += 1
    return "".join(out)


def functions(path):
    """(name, line of its opening brace, length in lines) of each function defined in path."""
    with open(path, encoding="utf-8", errors="replace") as f:
        code = strip_code(f.read())
    found = []
    depth = 0
    decl_start = 0  # offset where the current top-level declaration text starts
    body = None  # (name, line of its '{') while inside a function
    for i, c in enumerate(code):
        if c == "{":
            if depth == 0:
                head = code[decl_start:i].strip()
                if head.endswith(")") and "=" not in head:
                    # The parameter list is the last parenthesised group; the name precedes it.
                    k, level = len(head) - 1, 0
                    while k >= 0:
                        level += head[k] == ")"
                        level -= head[k] == "("
                        if level == 0:
                            break
                        k -= 1
                    m = IDENT_BEFORE_PAREN.search(head[:k])
                    if m:
                        body = (m.group(1), code.count("\n", 0, i) + 1)
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                if body:
                    last = code.count("\n", 0, i) + 1
                    found.append((body[0], body[1], last - body[1] + 1))
                    body = None
                decl_start = i + 1
        elif c == ";" and depth == 0:
            decl_start = i + 1
    return found


def c_files(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, dirs, files in os.walk(p):
                dirs.sort()
                for name in sorted(files):
                    if name.endswith(".c"):
                        yield os.path.join(root, name)
        else:
            yield p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max", type=int, default=120, help="longest allowed function, in lines (120)")
    ap.add_argument("paths", nargs="*", default=["host"], help="C files or directories (host)")
    args = ap.parse_args()
    over = 0
    for path in c_files(args.paths):
        for name, line, length in functions(path):
            if length > args.max:
                print(f"{path}:{line} {name} {length}")
                over += 1
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
