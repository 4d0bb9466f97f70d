#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The CPU reference of `ntpu bench --epoch`: the same MLP, optimizer, batch and
data as `ntpu train`, trained for one epoch in PyTorch on one CPU thread, then
evaluated on the test set. Prints one JSON object: wall seconds of the epoch
(training plus test evaluation, data already in memory) and the accuracies.

usage: bench_torch.py [--data DIR] [--layers 784,256,10] [--batch 64] [--lr 0.001] [--seed 0]
                      [--train-limit N] [--test-limit N]
"""
import argparse
import gzip
import json
import os
import sys
import time

import numpy as np

try:
    import torch
except ImportError:
    sys.exit("bench_torch.py: PyTorch is missing (Debian: apt-get install python3-torch, or `make bench`)")


def read_idx(path, limit):
    """An IDX file (plain or .gz) as a uint8 array of its first `limit` items."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)
    return arr[:limit] if limit else arr


def find(directory, stem):
    for name in (stem, stem + ".gz"):
        p = os.path.join(directory, name)
        if os.path.exists(p):
            return p
    sys.exit(f"bench_torch.py: no {stem}[.gz] in {directory}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--layers", default="784,256,10")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--train-limit", type=int, default=0)
    ap.add_argument("--test-limit", type=int, default=0)
    a = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    sizes = [int(s) for s in a.layers.split(",")]
    xtr = read_idx(find(a.data, "train-images-idx3-ubyte"), a.train_limit)
    ytr = read_idx(find(a.data, "train-labels-idx1-ubyte"), a.train_limit)
    xte = read_idx(find(a.data, "t10k-images-idx3-ubyte"), a.test_limit)
    yte = read_idx(find(a.data, "t10k-labels-idx1-ubyte"), a.test_limit)
    xtr = torch.from_numpy(xtr.reshape(len(xtr), -1).astype(np.float32) / 255.0)
    xte = torch.from_numpy(xte.reshape(len(xte), -1).astype(np.float32) / 255.0)
    ytr = torch.from_numpy(ytr.astype(np.int64))
    yte = torch.from_numpy(yte.astype(np.int64))

    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i + 2 < len(sizes):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    loss_fn = torch.nn.CrossEntropyLoss()

    t0 = time.perf_counter()
    perm = torch.randperm(len(xtr))
    total, steps = 0.0, 0
    model.train()
    for at in range(0, len(xtr), a.batch):
        idx = perm[at:at + a.batch]
        opt.zero_grad()
        loss = loss_fn(model(xtr[idx]), ytr[idx])
        loss.backward()
        opt.step()
        total += loss.item()
        steps += 1
    t_train = time.perf_counter() - t0
    model.eval()
    correct = 0
    with torch.no_grad():
        for at in range(0, len(xte), a.batch):
            correct += (model(xte[at:at + a.batch]).argmax(1) == yte[at:at + a.batch]).sum().item()
    t_total = time.perf_counter() - t0

    print(json.dumps({
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "layers": a.layers,
        "batch": a.batch,
        "train_samples": len(xtr),
        "test_samples": len(xte),
        "steps": steps,
        "train_seconds": round(t_train, 3),
        "seconds": round(t_total, 3),
        "train_loss": round(total / max(steps, 1), 4),
        "test_accuracy": round(correct / max(len(xte), 1), 4),
    }))


if __name__ == "__main__":
    main()
