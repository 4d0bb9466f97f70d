#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fail when a tracked source file has no SPDX-License-Identifier line in its first five lines.

Usage: tools/spdx_check.py [--add]   (--add inserts the line, as a comment of the file's kind)
"""
import subprocess
import sys

LICENSE = "Apache-2.0"
TAG = "SPDX-License-Identifier:"
# How each kind of file comments a line: (prefix, suffix), by name ending.
COMMENTS = [
    ((".c", ".h", ".cpp"), ("/* ", " */")),
    ((".sv", ".v", ".vh", ".svh"), ("// ", "")),
    ((".py", ".sh", ".mk", ".pcf", ".lpf", "Makefile", ".ci/run", ".clang-format", ".editorconfig"), ("# ", "")),
]


def comment_for(path):
    for endings, comment in COMMENTS:
        if path.endswith(endings):
            return comment
    return None


def add_tag(path, lines):
    prefix, suffix = comment_for(path)
    at = 1 if lines and lines[0].startswith("#!") else 0
    lines.insert(at, f"{prefix}{TAG} {LICENSE}{suffix}\n")
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(lines)


def main():
    add = "--add" in sys.argv[1:]
    files = subprocess.run(["git", "ls-files"], check=True, capture_output=True, text=True).stdout.split()
    missing = []
    for path in files:
        if comment_for(path) is None:
            continue
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
        if any(TAG in l for l in lines[:5]):
            continue
        if add:
            add_tag(path, lines)
        else:
            missing.append(path)
    for path in missing:
        print(f"{path}:1: no '{TAG} {LICENSE}' line in its first five lines", file=sys.stderr)
    if missing:
        print(f"spdx: {len(missing)} files without a licence line (tools/spdx_check.py --add adds them)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
