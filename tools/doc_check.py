#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fail when a doc line is longer than 300 characters or a decision record is longer than 150 lines.

Checks README.md, rtl/README.md and docs/**/*.md (lines counted in characters, UTF-8);
records are docs/decisions/NNNN-*.md. Prints file:line: reason for each offence; exit 1 if any.

Usage: tools/doc_check.py [ROOT]   (ROOT defaults to the repository holding this script)
"""
import pathlib
import sys

MAX_LINE = 300
MAX_RECORD = 150


def main(argv):
    root = pathlib.Path(argv[1]) if len(argv) > 1 else pathlib.Path(__file__).resolve().parent.parent
    files = [root / "README.md", root / "rtl" / "README.md"] + sorted((root / "docs").rglob("*.md"))
    files = [f for f in files if f.is_file()]
    if not files:
        print(f"doc_check: no docs under {root}", file=sys.stderr)
        return 2
    bad = 0
    for f in files:
        rel = f.relative_to(root)
        lines = f.read_text(encoding="utf-8").splitlines()
        for n, line in enumerate(lines, 1):
            if len(line) > MAX_LINE:
                print(f"{rel}:{n}: line is {len(line)} characters (max {MAX_LINE})")
                bad += 1
        if rel.parent == pathlib.Path("docs/decisions") and rel.name[:4].isdigit() and len(lines) > MAX_RECORD:
            print(f"{rel}:{len(lines)}: decision record is {len(lines)} lines (max {MAX_RECORD})")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
