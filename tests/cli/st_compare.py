# SPDX-License-Identifier: Apache-2.0
"""Compares the tensors of two safetensors files bit for bit (metadata aside), and when A has a sidecar
A.state (a checkpoint's optimizer state, docs/training.md) also those of A.state and B.state.
Usage: st_compare.py A B  -- exit 0 when every tensor is identical."""
import json, os, struct, sys

def tensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in header.items() if k != "__metadata__"}

def compare(pa, pb):
    a, b = tensors(pa), tensors(pb)
    if a.keys() != b.keys():
        sys.exit(f"{pa}, {pb}: different tensors: {sorted(a.keys() ^ b.keys())}")
    diff = [k for k in a if a[k] != b[k]]
    if diff:
        sys.exit(f"{pa}, {pb}: {len(diff)} of {len(a)} tensors differ: {', '.join(sorted(diff)[:6])}")
    print(f"{len(a)} tensors identical")

compare(sys.argv[1], sys.argv[2])
if os.path.exists(sys.argv[1] + ".state"):
    compare(sys.argv[1] + ".state", sys.argv[2] + ".state")
