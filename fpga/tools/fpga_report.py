#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads the FPGA tools' reports for mk/fpga.mk.

  fpga_report.py why BOARD_DIR            after a failed nextpnr run: one line saying why
  fpga_report.py check BOARD_DIR HZ       fail unless every clock's achieved Fmax >= HZ
  fpga_report.py table FPGA_BUILD_DIR     the resource/timing table of every board built there
  fpga_report.py budget BOARD_DIR DOC     fail if a resource grew more than 5 % over DOC's table row
  fpga_report.py modules STAT_JSON        per-module cells of a non-flattened synthesis

BOARD_DIR holds board.json (written by mk/fpga.mk), synth_stat.json (yosys `stat -json`),
nextpnr.log and pnr_report.json (nextpnr --report). After a failed run `why` keeps the
utilization nextpnr printed in pnr_fail.json, so the table can show a design that does not fit.
"""
import json
import os
import re
import sys

# One column per kind of resource; each family names its cells differently (nextpnr's names).
RESOURCES = [(("ICESTORM_LC", "TRELLIS_COMB"), "logic cells (iCE40 LC / ECP5 LUT4)"),
             (("ICESTORM_DSP", "MULT18X18D"), "DSPs (SB_MAC16 / MULT18X18D)"),
             (("ICESTORM_RAM", "DP16KD"), "block RAM (EBR / DP16KD)"),
             (("ICESTORM_SPRAM",), "SPRAM")]


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def log_utilization(log):
    """nextpnr's 'Device utilisation' block: {name: (used, available)}."""
    util = {}
    for m in re.finditer(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+\d+%", log, re.M):
        util[m.group(1)] = (int(m.group(2)), int(m.group(3)))
    return util


def cmd_why(bd):
    try:
        with open(os.path.join(bd, "nextpnr.log"), encoding="utf-8", errors="replace") as f:
            log = f.read()
    except OSError:
        sys.exit(f"make fpga: nextpnr failed and left no log in {bd}")
    util = log_utilization(log)
    with open(os.path.join(bd, "pnr_fail.json"), "w", encoding="utf-8") as f:
        json.dump({k: {"used": u, "available": a} for k, (u, a) in util.items()}, f)
    over = [f"{k} {u} of {a} ({100 * u // a} %)" for k, (u, a) in util.items() if a and u > a]
    errors = re.findall(r"^ERROR: (.*)$", log, re.M)
    if over:
        print(f"make fpga: the design does not fit: {', '.join(over)}; see {bd}/nextpnr.log")
    else:
        detail = errors[0] if errors else "no ERROR line"
        print(f"make fpga: nextpnr failed: {detail}; see {bd}/nextpnr.log")


def cmd_check(bd, hz):
    rep = load(os.path.join(bd, "pnr_report.json"))
    if not rep or not rep.get("fmax"):
        sys.exit(f"make fpga: no timing report from nextpnr in {bd}")
    want = hz / 1e6
    bad = []
    for clk, t in sorted(rep["fmax"].items()):
        got = t["achieved"]
        if got < want:
            bad.append(f"clock '{clk}' reaches {got:.2f} MHz, below the {want:g} MHz it must run at")
        else:
            print(f"timing met: clock '{clk}' reaches {got:.2f} MHz at {want:g} MHz "
                  f"({100 * (got - want) / want:.0f} % margin)")
    if bad:
        sys.exit("make fpga: timing not met: " + "; ".join(bad) + f" (see {bd}/nextpnr.log)")


def fmt_use(util, keys):
    u = next((util[k] for k in keys if k in util), None)
    if not u:
        return "—"
    used, avail = u["used"], u["available"]
    return f"{used} / {avail} ({100 * used // avail} %)" if avail else str(used)


def cmd_table(root):
    rows = []
    for board in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        bd = os.path.join(root, board)
        info = load(os.path.join(bd, "board.json"))
        if not info:
            continue
        rep = load(os.path.join(bd, "pnr_report.json"))
        fail = load(os.path.join(bd, "pnr_fail.json"))
        clock = info["clock_hz"] / 1e6
        link = info.get("link") or f"{info['baud'] // 10 / 1000:g} kB/s each way ({info['baud'] / 1e6:g} Mbaud 8N1)"
        if rep:
            util = rep.get("utilization", {})
            fmax = min(t["achieved"] for t in rep["fmax"].values()) if rep.get("fmax") else None
            status = "timing met" if fmax is not None and fmax >= clock else "TIMING NOT MET"
            fmax_s = f"{fmax:.1f} MHz" if fmax is not None else "—"
        elif fail:
            util, fmax_s, status = fail, "—", "DOES NOT FIT"
        else:
            continue
        rows.append([board, info["device"], info["config"]] + [fmt_use(util, k) for k, _ in RESOURCES] +
                    [fmax_s, f"{clock:g} MHz", link, status])
    if not rows:
        sys.exit(f"fpga-report: nothing built under {root} yet (make fpga BOARD=<board>)")
    head = ["board", "device", "configuration"] + [n for _, n in RESOURCES] + \
           ["Fmax", "clock", "link", "status"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")


def doc_rows(doc):
    """The rows of DOC's resource tables (as `table` prints them), by board: {board: {column: cell}}."""
    rows, head = {}, None
    with open(doc, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else None
            if not cells:
                head = None
            elif cells[0] == "board" and any(n in cells for _, n in RESOURCES):
                head = cells
            elif head and not set(cells[0]) <= set("-") and len(cells) == len(head):
                rows[cells[0]] = dict(zip(head, cells))
    return rows


BUDGET = 1.05  # a resource may grow 5 % over the documented figure before CI fails


def cmd_budget(bd, doc):
    """The board built in bd against its row in doc: fail if any resource's use grew more than 5 %."""
    board = os.path.basename(os.path.normpath(bd))
    rep = load(os.path.join(bd, "pnr_report.json"))
    if not rep:
        sys.exit(f"fpga budget: no nextpnr report in {bd} (make fpga first)")
    row = doc_rows(doc).get(board)
    if not row:
        sys.exit(f"fpga budget: {doc} has no row for '{board}': add it (make fpga-report prints it)")
    util, over = rep.get("utilization", {}), []
    for keys, name in RESOURCES:
        u = next((util[k] for k in keys if k in util), None)
        m = re.match(r"(\d+)", row.get(name, ""))
        if not u or not m:
            continue
        was, now = int(m.group(1)), u["used"]
        verdict = "over the budget" if now > was * BUDGET else "ok"
        print(f"{board}: {name}: {now} (documented {was}, {100 * (now - was) / max(was, 1):+.1f} %) {verdict}")
        if now > was * BUDGET:
            over.append(f"{name} {now} > {was} + 5 %")
    if over:
        sys.exit(f"fpga budget: {board} grew past {doc}: " + "; ".join(over))


def cmd_modules(path):
    """Each module's own cells and, through its instances, its whole subtree's LUTs and DSPs."""
    stat = load(path)
    if not stat:
        sys.exit(f"fpga-modules: cannot read {path}")
    mods = {k.lstrip("\\"): v for k, v in stat["modules"].items()}

    def short(name):
        m = re.search(r"(ntpu_\w+)", name)
        return m.group(1) if m else name

    def own(name, kind):
        return mods[name].get("num_cells_by_type", {}).get(kind, 0)

    def total(name, kind, seen=()):
        t = own(name, kind)
        for child, n in mods[name].get("num_cells_by_type", {}).items():
            c = child.lstrip("\\")
            if c in mods and c not in seen:
                t += n * total(c, kind, seen + (name,))
        return t

    def tree(name, depth, count):
        luts = total(name, "SB_LUT4") + total(name, "LUT4")
        ffs = sum(total(name, k) for k in FF_KINDS)
        dsps = total(name, "SB_MAC16") + total(name, "MULT18X18D")
        brams = total(name, "SB_RAM40_4K") + total(name, "DP16KD")
        indent = "· " * (depth - 1) + "└ " if depth else ""
        print(f"| {indent}{short(name)}{' ×%d' % count if count > 1 else ''} | {luts} | "
              f"{ffs} | {dsps} | {brams} |")
        for child, n in sorted(mods[name].get("num_cells_by_type", {}).items()):
            c = child.lstrip("\\")
            if c in mods:
                tree(c, depth + 1, n)

    tops = [m for m in mods if not any(m in (c.lstrip("\\") for c in v.get("num_cells_by_type", {}))
                                       for v in mods.values())]
    print("| module (one instance; ×n instances of it in the parent) | LUT4 | flip-flops | DSPs | block RAM |")
    print("|---|---|---|---|---|")
    for t in tops:
        tree(t, 0, 1)


FF_KINDS = ("SB_DFF", "SB_DFFE", "SB_DFFSR", "SB_DFFSS", "SB_DFFESR", "SB_DFFESS", "SB_DFFR", "SB_DFFS",
            "SB_DFFER", "SB_DFFES", "TRELLIS_FF")


def main():
    a = sys.argv[1:]
    if len(a) == 2 and a[0] == "why":
        cmd_why(a[1])
    elif len(a) == 3 and a[0] == "check":
        cmd_check(a[1], int(a[2]))
    elif len(a) == 2 and a[0] == "table":
        cmd_table(a[1])
    elif len(a) == 3 and a[0] == "budget":
        cmd_budget(a[1], a[2])
    elif len(a) == 2 and a[0] == "modules":
        cmd_modules(a[1])
    else:
        sys.exit(__doc__.strip().split("\n\n")[0])


if __name__ == "__main__":
    main()
