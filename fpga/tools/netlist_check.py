#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lists the cell inputs of a synthesized netlist (Yosys JSON) that nothing drives.

Usage: netlist_check.py ntpu.json

Yosys writes an undriven bit as "x". In a netlist for a bitstream that is a defect: the place and
route tool ties the input to a constant, whatever the RTL meant (make fpga-test found an SB_MAC16
whose accumulator input was all "x"). Inputs that a vendor cell ignores in the mode the netlist
sets are allowed (IGNORED below, with the reason). Prints one line per offending cell port and
exits 1 if there is any, 0 otherwise.
"""
import json
import sys


def _mac16_ignored(params, port):
    """SB_MAC16 (iCE40 DSP): carry and sign-extension inputs that its mode does not select."""
    sel = int(str(params.get("BOTADDSUB_CARRYSELECT", "0")), 2)
    lower = int(str(params.get("BOTADDSUB_LOWERINPUT", "0")), 2)
    return {"CI": sel != 3, "ACCUMCI": sel != 2, "SIGNEXTIN": lower != 3}.get(port, False)


def _dp16kd_ignored(params, port, conns, used):
    """DP16KD (ECP5 block RAM): data inputs of a port that never writes (WEx tied low), and data
    bits that no reader uses (a word narrower than the block's 9 or 18 bits), when both ports
    are equally wide so that data bit n is output bit n."""
    side = port[2]  # DIA<n> or DIB<n>
    if conns.get("WE" + side) == ["0"]:
        return True
    n = port[3:]
    if params.get("DATA_WIDTH_A") != params.get("DATA_WIDTH_B"):
        return False
    return not any(b in used for o in ("DOA" + n, "DOB" + n) for b in conns.get(o, []))


IGNORED = {"SB_MAC16": lambda params, port, conns, used: _mac16_ignored(params, port),
           "DP16KD": _dp16kd_ignored}


def main(argv):
    if len(argv) != 2:
        print("usage: netlist_check.py ntpu.json", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        netlist = json.load(f)
    bad = 0
    for mod_name, mod in netlist["modules"].items():
        if "top" not in mod.get("attributes", {}):
            continue
        # Net bits something reads: a cell input or an output of the top.
        used = {b for c in mod.get("cells", {}).values() for p, bits in c["connections"].items()
                if c.get("port_directions", {}).get(p) == "input" for b in bits}
        used |= {b for p in mod.get("ports", {}).values() if p["direction"] != "input" for b in p["bits"]}
        for cell_name, cell in mod.get("cells", {}).items():
            dirs = cell.get("port_directions", {})
            ignored = IGNORED.get(cell["type"], lambda *_: False)
            for port, bits in cell["connections"].items():
                if dirs.get(port) != "input" or "x" not in bits:
                    continue
                if ignored(cell.get("parameters", {}), port, cell["connections"], used):
                    continue
                n = bits.count("x")
                print(f"{argv[1]}: {cell['type']} {cell_name}: input {port} has {n} of {len(bits)} "
                      f"bits undriven")
                bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
