# SPDX-License-Identifier: Apache-2.0
"""PyTorch's side of tests/cli/torch_interop.sh: checkpoints between nanoTPU and torch.nn.Sequential.

  torch_interop.py load CKPT DATA N NTPU_LOGITS.npy
      builds the torch.nn.Sequential of the SPEC and input shape in CKPT's metadata, loads CKPT into it
      with a strict load_state_dict, predicts the first N test samples of the IDX directory DATA and
      compares the classes with those of ntpu's logits (argmax agreement >= 99.5 %).
  torch_interop.py train SPEC DATA STEPS N OUT
      trains SPEC in PyTorch (fp32, Adam, batch 64) for STEPS steps, saves its state_dict to OUT as
      safetensors.torch.save_file(model.state_dict(), OUT) would (no metadata), and its logits of the
      first N test samples to OUT.logits.npy.
  torch_interop.py compare TORCH_LOGITS.npy NTPU_LOGITS.npy DATA
      the two runs' accuracies on the test labels (within 0.5 points) and argmax agreement (>= 99.5 %).

safetensors (the Python package) is not in Debian: the format is small (an 8-byte little-endian header
length, a JSON header naming each tensor's dtype, shape and byte range, the raw little-endian data), so
this file reads and writes it itself.
"""
import gzip
import json
import os
import re
import struct
import sys
from collections import OrderedDict

import numpy as np
import torch
from torch import nn

AGREEMENT = 0.995


def st_read(path):
    """The tensors (name -> torch.Tensor) and metadata of a safetensors file."""
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = blob[8 + n:]
    tensors = OrderedDict()
    for name, t in header.items():
        assert t["dtype"] == "F32", f"{path}: {name} is {t['dtype']}"
        a, b = t["data_offsets"]
        tensors[name] = torch.from_numpy(np.frombuffer(data[a:b], dtype="<f4").copy()).reshape(t["shape"])
    return tensors, meta


def st_write(path, tensors):
    """What safetensors.torch.save_file(tensors, path) writes: F32 tensors, no metadata."""
    header, blobs, at = {}, [], 0
    for name, t in tensors.items():
        raw = t.detach().contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))


def idx_load(data, split, limit):
    """Images (N x 1 x H x W, float32 in [0, 1], as ntpu scales them) and labels of an IDX split."""
    prefix = "train" if split == "train" else "t10k"

    def raw(name):
        for p in (os.path.join(data, name), os.path.join(data, name + ".gz")):
            if os.path.exists(p):
                return (gzip.open if p.endswith(".gz") else open)(p, "rb").read()
        sys.exit(f"{data}: no {name}")

    img, lab = raw(f"{prefix}-images-idx3-ubyte"), raw(f"{prefix}-labels-idx1-ubyte")
    count, rows, cols = struct.unpack(">III", img[4:16])
    count = min(count, limit)
    x = np.frombuffer(img[16:16 + count * rows * cols], dtype=np.uint8).astype(np.float32) / np.float32(255)
    y = np.frombuffer(lab[8:8 + count], dtype=np.uint8).astype(np.int64)
    return torch.from_numpy(x.reshape(count, 1, rows, cols)), torch.from_numpy(y)


def build(spec, in_shape):
    """The torch.nn.Sequential of spec: one module per written item, named by its position; a
    flatten the SPEC implies (before an fc whose input is still a map) is a module without
    parameters under another name, so the state_dict's names are those of the written items."""
    c, h, w = in_shape
    flat = False
    mods = OrderedDict()
    for i, item in enumerate(spec.split(",")):
        m = re.fullmatch(r"conv(\d+)k(\d+)(?:s(\d+))?(?:p(\d+))?", item)
        if m:
            out, k, s, p = int(m[1]), int(m[2]), int(m[3] or 1), int(m[4] or 0)
            mods[str(i)] = nn.Conv2d(c, out, k, stride=s, padding=p)
            c, h, w = out, (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        elif item == "relu":
            mods[str(i)] = nn.ReLU()
        elif re.fullmatch(r"(max|avg)pool\d+", item):
            k = int(item[7:])
            mods[str(i)] = nn.MaxPool2d(k) if item.startswith("max") else nn.AvgPool2d(k)
            h, w = h // k, w // k
        elif item == "flatten":
            mods[str(i)] = nn.Flatten()
            c, h, w, flat = c * h * w, 1, 1, True
        elif item.startswith("fc"):
            if not flat:
                mods[f"implied_flatten_{i}"] = nn.Flatten()
                c, h, w, flat = c * h * w, 1, 1, True
            mods[str(i)] = nn.Linear(c, int(item[2:]))
            c = int(item[2:])
        else:
            sys.exit(f"unknown SPEC item {item!r}")
    return nn.Sequential(mods)


def predict(model, x, in_shape):
    with torch.no_grad():
        return model(x.reshape(len(x), *in_shape)).numpy()


def agreement(a, b):
    return float((a.argmax(1) == b.argmax(1)).mean())


def cmd_load(ckpt, data, n, ntpu_logits):
    tensors, meta = st_read(ckpt)
    in_shape = tuple(int(v) for v in meta["input"].split("x"))
    model = build(meta["arch"], in_shape)
    model.load_state_dict(tensors, strict=True)  # the file holds the model's tensors, and only those
    x, y = idx_load(data, "test", int(n))
    mine, theirs = predict(model, x, in_shape), np.load(ntpu_logits)
    agree = agreement(mine, theirs)
    print(f"{meta['arch']} (input {meta['input']}): {len(tensors)} tensors loaded strictly into "
          f"torch.nn.Sequential; argmax agreement with ntpu {agree:.4f} on {len(x)} samples; accuracy torch "
          f"{float((mine.argmax(1) == y.numpy()).mean()):.4f}, ntpu {float((theirs.argmax(1) == y.numpy()).mean()):.4f}")
    return 0 if agree >= AGREEMENT else 1


def cmd_train(spec, data, steps, n, out):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    x, y = idx_load(data, "train", 60000)
    model = build(spec, tuple(x.shape[1:]))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(0)
    for step in range(int(steps)):
        idx = torch.randint(0, len(x), (64,), generator=g)
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    st_write(out, model.state_dict())
    xt, yt = idx_load(data, "test", int(n))
    logits = predict(model, xt, tuple(x.shape[1:]))
    np.save(out + ".logits.npy", logits)
    print(f"PyTorch {spec}: {steps} steps, last loss {loss.item():.4f}, test accuracy "
          f"{float((logits.argmax(1) == yt.numpy()).mean()):.4f} on {len(xt)} samples")
    return 0


def cmd_compare(torch_logits, ntpu_logits, data):
    a, b = np.load(torch_logits), np.load(ntpu_logits)
    if a.shape != b.shape:
        sys.exit(f"logits of shape {a.shape} and {b.shape}")
    _, y = idx_load(data, "test", len(a))
    acc_a, acc_b = float((a.argmax(1) == y.numpy()).mean()), float((b.argmax(1) == y.numpy()).mean())
    agree = agreement(a, b)
    print(f"test accuracy PyTorch {acc_a:.4f}, ntpu {acc_b:.4f} on {len(a)} samples; argmax agreement {agree:.4f}; "
          f"largest logit difference {float(np.abs(a - b).max()):.4f}")
    return 0 if agree >= AGREEMENT and abs(acc_a - acc_b) <= 0.005 else 1


if __name__ == "__main__":
    cmds = {"load": cmd_load, "train": cmd_train, "compare": cmd_compare}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    sys.exit(cmds[sys.argv[1]](*sys.argv[2:]))
