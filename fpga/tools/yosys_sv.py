#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Copy SystemVerilog files into a form Yosys's own frontend reads.

The RTL is written for Icarus 11 and Verilator 5.006 (the house style of rtl/README.md). Yosys's built-in
frontend (checked with 0.70) lacks three constructs it uses, each rewritten here to its
equivalent:
  - a package import in a module header (`module m import p::*; #(...)`) -> the same import at
    file scope, in front of the module;
  - an import of single names inside a module (`import p::NAME;`) -> removed, with `import p::*;`
    at file scope (the package's names do not collide with the modules' own);
  - `return X;` as a function's last statement -> `FNAME = X;`; `if (C) return X;` before it
    -> `if (C) FNAME = X; else begin` ... `end`.
Anything else is copied unchanged. A construct that does not fit these patterns stops the
script with a message, rather than producing something subtly different.

usage: yosys_sv.py OUTDIR FILE...
"""
import os
import re
import sys

HDR_IMPORT = re.compile(r"^(module\s+\w+)\s*\n\s*import\s+(\w+)::\*\s*;\s*\n", re.M)
NAME_IMPORT = re.compile(r"^\s*import\s+(\w+)::\w+\s*;\s*\n", re.M)
FUNC = re.compile(r"\bfunction\s+(?:automatic\s+|static\s+)?(?:[\w\[\]:\s-]*?\s)?(\w+)\s*\(")


def fail(path, msg):
    sys.exit(f"yosys_sv.py: {path}: {msg}")


def rewrite_returns(path, text):
    out = []
    func = None
    opened = 0
    lines = text.split("\n")
    for i, line in enumerate(lines):
        m = FUNC.search(line)
        if m and not line.lstrip().startswith("//"):
            func = m.group(1)
        if re.match(r"\s*endfunction\b", line):
            func = None
        # An early exit `if (C) return X;` becomes `if (C) F = X; else begin`, closed after the
        # function's last statement: the rest of the function is its else branch.
        e = re.match(r"(\s*)if\s*(\(.*\))\s*return\s+(.*);\s*$", line)
        if e and func is not None and not line.lstrip().startswith("//"):
            line = f"{e.group(1)}if {e.group(2)} {func} = {e.group(3)}; else begin"
            opened += 1
        r = re.match(r"(\s*)return\s+(.*);\s*$", line)
        if r:
            rest = [l for l in lines[i + 1:] if l.strip()]
            if func is None or not rest or not re.match(r"\s*endfunction\b", rest[0]):
                fail(path, f"line {i + 1}: `return` that is not a function's last statement")
            line = f"{r.group(1)}{func} = {r.group(2)};" + " end" * opened
            opened = 0
        elif re.search(r"\breturn\b", line.split("//")[0]) and func is not None:
            fail(path, f"line {i + 1}: a `return` this script cannot rewrite")
        out.append(line)
    return "\n".join(out)


def convert(path, text):
    pkgs = []

    def hdr(m):
        pkgs.append(m.group(2))
        return m.group(1) + "\n"

    text = HDR_IMPORT.sub(hdr, text)
    for m in NAME_IMPORT.finditer(text):
        pkgs.append(m.group(1))
    text = NAME_IMPORT.sub("", text)
    if pkgs:
        first = re.search(r"^module\b", text, re.M)
        if not first:
            fail(path, "imports but no module")
        imports = "".join(f"import {p}::*;\n" for p in dict.fromkeys(pkgs))
        text = text[:first.start()] + imports + text[first.start():]
    if re.search(r"^module\s+\w+\s*\n?\s*import\b", text, re.M):
        fail(path, "an import in a module header this script does not recognise")
    return rewrite_returns(path, text)


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.strip().split("\n\n")[-1])
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for path in sys.argv[2:]:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        dst = os.path.join(outdir, os.path.basename(path))
        with open(dst + ".tmp", "w", encoding="utf-8") as f:
            f.write(convert(path, text))
        os.replace(dst + ".tmp", dst)


if __name__ == "__main__":
    main()
