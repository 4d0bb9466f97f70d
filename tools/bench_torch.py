#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The CPU reference of `make bench` and `ntpu bench --epoch`: the model of `ntpu train --arch SPEC`
(or `--layers`), with the same optimizer (Adam unless --optimizer), batch and data, trained in PyTorch fp32 on one CPU
thread, each epoch evaluated on the test set. Prints one JSON object: per epoch the train loss, the
test accuracy and the wall seconds (training plus test evaluation, data already in memory), and
which BLAS library the process actually mapped.

PyTorch in Debian links libblas.so.3 by its generic name, so the BLAS is whatever the dynamic loader
finds. --blas openblas (the default) puts Debian's libopenblas0-pthread first on the loader's path,
whatever the system's alternative says; --blas reference does the same with the reference BLAS
(libblas3), --blas system leaves the loader alone. Both are pinned to one thread
(OPENBLAS_NUM_THREADS=1, OMP_NUM_THREADS=1): this build does not tell OpenBLAS torch's thread count.

usage: bench_torch.py [--data DIR] [--arch SPEC | --layers 784,256,10] [--optimizer adam] [--batch 64] [--lr 0.001]
                      [--seed 0] [--epochs 1] [--blas openblas|reference|system]
                      [--train-limit N] [--test-limit N]
"""
import argparse
import glob
import gzip
import json
import os
import re
import sys
import time

import numpy as np

ME = "bench_torch.py"
# Where Debian puts each BLAS (multiarch directory); the first library named libblas.so.3 wins.
# LAPACK too: Debian's liblapack.so.3 from OpenBLAS would map OpenBLAS beside the reference BLAS.
BLAS_DIRS = {"openblas": ("libopenblas0-pthread", ["/usr/lib/*/openblas-pthread"]),
             "reference": ("libblas3 liblapack3", ["/usr/lib/*/blas", "/usr/lib/*/lapack"])}
REEXEC_MARK = "NTPU_BENCH_TORCH_BLAS"


def pin_blas(choice):
    """Re-executes this script with the chosen BLAS first on LD_LIBRARY_PATH and one BLAS thread:
    the loader reads both only when a process starts. Returns once it runs in that environment."""
    if os.environ.get(REEXEC_MARK) == choice:
        return
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env[REEXEC_MARK] = choice
    if choice != "system":
        package, patterns = BLAS_DIRS[choice]
        dirs = [next(iter(sorted(glob.glob(p))), None) for p in patterns]
        if None in dirs or not os.path.exists(os.path.join(dirs[0], "libblas.so.3")):
            sys.exit(f"{ME}: no {patterns[0]}/libblas.so.3 (Debian: apt-get install {package}, or `make deps-bench`)")
        env["LD_LIBRARY_PATH"] = ":".join(dirs + [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p])
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def mapped_blas():
    """The BLAS and LAPACK library files this process has mapped (real paths), in load order."""
    seen = []
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            name = os.path.basename(path)
            if re.search(r"blas|lapack|mkl", name) and path not in seen:
                seen.append(path)
    return seen


def blas_name(libs):
    """A short name for the BLAS torch calls: the file mapped as libblas.so.3 (torch's NEEDED name;
    it comes before liblapack.so.3 there, so its sgemm is the one torch binds)."""
    blas = [p for p in libs if os.path.basename(p).startswith("libblas.so.3")]
    if not blas:
        return "none"
    if "openblas" in blas[0]:
        versions = [re.search(r"-r([\d.]+?)\.so", p) for p in libs]
        version = next((v.group(1) for v in versions if v), "")
        return f"OpenBLAS {version}".strip() + (" (pthread)" if "pthread" in blas[0] else "")
    if "/blas/" in blas[0]:
        m = re.search(r"libblas\.so\.([\d.]+)$", blas[0])
        return "reference BLAS" + (f" {m.group(1)}" if m else "")
    return os.path.basename(blas[0])


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
    sys.exit(f"{ME}: no {stem}[.gz] in {directory}")


ITEM = re.compile(r"conv(\d+)k(\d+)(?:s(\d+))?(?:p(\d+))?|relu|maxpool(\d+)|avgpool(\d+)|flatten|fc(\d+)")


def parse_spec(spec):
    """SPEC (ntpu's grammar) as a list of (kind, numbers) items."""
    items = []
    for word in spec.split(","):
        m = ITEM.fullmatch(word.strip())
        if not m:
            sys.exit(f"{ME}: --arch: '{word}' is not conv<C>k<K>[s<S>][p<P>], relu, maxpool<K>, avgpool<K>, "
                     "flatten or fc<N>")
        g = [int(x) if x else None for x in m.groups()]
        if word.startswith("conv"):
            items.append(("conv", (g[0], g[1], g[2] or 1, g[3] or 0)))
        elif word.startswith(("maxpool", "avgpool")):
            items.append((word[:7], (g[4] or g[5],)))
        elif word.startswith("fc"):
            items.append(("fc", (g[6],)))
        else:
            items.append((word, ()))
    if not items or items[-1][0] != "fc":
        sys.exit(f"{ME}: --arch: the last item must be fc<N>")
    return items


def build_model(torch, items, shape):
    """The torch.nn.Sequential of SPEC, one module per item at the item's position (the checkpoint
    names of issue 23). A flatten the SPEC does not write is not a module: forward() flattens a
    spatial input before an fc. shape is the input (C, H, W)."""
    nn = torch.nn

    class Net(nn.Sequential):
        def forward(self, x):
            for m in self:
                if isinstance(m, nn.Linear) and x.dim() > 2:
                    x = torch.flatten(x, 1)
                x = m(x)
            return x

    c, h, w = shape
    mods = []
    for i, (kind, v) in enumerate(items):
        if kind == "conv":
            co, k, s, p = v
            if h + 2 * p < k or w + 2 * p < k or c == 0:
                sys.exit(f"{ME}: --arch: item {i} (conv k{k}) does not fit its {c}x{h}x{w} input")
            mods.append(nn.Conv2d(c, co, k, stride=s, padding=p))
            c, h, w = co, (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
        elif kind in ("maxpool", "avgpool"):
            k = v[0]
            if h < k or w < k or c == 0:
                sys.exit(f"{ME}: --arch: item {i} ({kind}{k}) does not fit its {c}x{h}x{w} input")
            mods.append(nn.MaxPool2d(k) if kind == "maxpool" else nn.AvgPool2d(k))
            h, w = h // k, w // k
        elif kind == "relu":
            mods.append(nn.ReLU())
        elif kind == "flatten":
            mods.append(nn.Flatten())
            c, h, w = c * h * w, 1, 1
        else:
            mods.append(nn.Linear(c * h * w, v[0]))
            c, h, w = v[0], 1, 1
    return Net(*mods)


def make_optimizer(torch, name, params, lr):
    o = torch.optim
    return {"adam": lambda: o.Adam(params, lr=lr), "adamw": lambda: o.AdamW(params, lr=lr, weight_decay=0.01),
            "sgd": lambda: o.SGD(params, lr=lr), "momentum": lambda: o.SGD(params, lr=lr, momentum=0.9)}[name]()


def load(a, torch):
    """Train and test images as float tensors N x 1 x H x W in [0, 1], labels as int64."""
    out = []
    for part in ("train", "t10k"):
        limit = a.train_limit if part == "train" else a.test_limit
        x = read_idx(find(a.data, f"{part}-images-idx3-ubyte"), limit)
        y = read_idx(find(a.data, f"{part}-labels-idx1-ubyte"), limit)
        out.append(torch.from_numpy(x.reshape(len(x), 1, x.shape[1], x.shape[2]).astype(np.float32) / 255.0))
        out.append(torch.from_numpy(y.astype(np.int64)))
    return out


def train_epoch(torch, model, opt, xtr, ytr, batch):
    """One epoch in a fresh random order; (mean train loss, train accuracy, steps)."""
    loss_fn = torch.nn.CrossEntropyLoss()
    perm = torch.randperm(len(xtr))
    total, correct, steps = 0.0, 0, 0
    model.train()
    for at in range(0, len(xtr), batch):
        idx = perm[at:at + batch]
        opt.zero_grad()
        logits = model(xtr[idx])
        loss = loss_fn(logits, ytr[idx])
        loss.backward()
        opt.step()
        total += loss.item() * len(idx)
        correct += (logits.argmax(1) == ytr[idx]).sum().item()
        steps += 1
    return total / max(len(xtr), 1), correct / max(len(xtr), 1), steps


def test_accuracy(torch, model, xte, yte, batch):
    model.eval()
    correct = 0
    with torch.no_grad():
        for at in range(0, len(xte), batch):
            correct += (model(xte[at:at + batch]).argmax(1) == yte[at:at + batch]).sum().item()
    return correct / max(len(xte), 1)


def args():
    ap = argparse.ArgumentParser(description="PyTorch reference of ntpu train (one CPU thread)")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--arch", help="ntpu's SPEC, e.g. conv16k3p1,relu,maxpool2,conv32k3p1,relu,maxpool2,fc10")
    ap.add_argument("--layers", default="784,256,10", help="an MLP: fc<n1>,relu,...,fc<last> (without --arch)")
    ap.add_argument("--optimizer", choices=("adam", "adamw", "sgd", "momentum"), default="adam",
                    help="as ntpu train's, with its defaults (momentum 0.9, adamw weight decay 0.01)")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--blas", choices=("openblas", "reference", "system"), default="openblas")
    ap.add_argument("--train-limit", type=int, default=0)
    ap.add_argument("--test-limit", type=int, default=0)
    a = ap.parse_args()
    if a.batch < 1 or a.epochs < 1:
        sys.exit(f"{ME}: --batch and --epochs must be at least 1")
    a.mlp = not a.arch
    if a.mlp:
        sizes = a.layers.split(",")
        if len(sizes) < 2 or not all(s.isdigit() and int(s) > 0 for s in sizes):
            sys.exit(f"{ME}: --layers: '{a.layers}' is not a list of sizes like 784,256,10")
        a.arch = ",relu,".join(f"fc{s}" for s in sizes[1:])
    return a


def main():
    a = args()
    pin_blas(a.blas)
    try:
        import torch
    except ImportError:
        sys.exit(f"{ME}: PyTorch is missing (Debian: apt-get install python3-torch, or `make deps-bench`)")
    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    xtr, ytr, xte, yte = load(a, torch)
    if a.mlp and int(a.layers.split(",")[0]) != xtr[0].numel():
        sys.exit(f"{ME}: --layers: the data's input size is {xtr[0].numel()}, not {a.layers.split(',')[0]}")
    model = build_model(torch, parse_spec(a.arch), tuple(xtr.shape[1:]))
    opt = make_optimizer(torch, a.optimizer, model.parameters(), a.lr)

    history, cpu0 = [], time.process_time()
    for e in range(a.epochs):
        t0 = time.perf_counter()
        loss, train_acc, steps = train_epoch(torch, model, opt, xtr, ytr, a.batch)
        t_train = time.perf_counter() - t0
        acc = test_accuracy(torch, model, xte, yte, a.batch)
        history.append({"epoch": e + 1, "steps": steps, "train_loss": round(loss, 6),
                        "train_accuracy": round(train_acc, 6), "test_accuracy": round(acc, 6),
                        "train_seconds": round(t_train, 3), "seconds": round(time.perf_counter() - t0, 3)})
        print(f"{ME}: epoch {e + 1}/{a.epochs}: loss {loss:.4f}, test accuracy {acc:.4f}, "
              f"{history[-1]['seconds']:.1f} s", file=sys.stderr)
    config = torch.__config__.show()
    info = re.search(r"BLAS_INFO=(\w+)", config)
    last = history[-1]
    libs = mapped_blas()
    print(json.dumps({
        "torch": torch.__version__,
        "blas": a.blas,
        "blas_libraries": libs,
        "blas_name": blas_name(libs),
        "blas_info": info.group(1) if info else "?",
        "threads": torch.get_num_threads(),
        "os_threads": len(os.listdir("/proc/self/task")),
        "cpu_seconds": round(time.process_time() - cpu0, 3),
        "arch": a.arch,
        "layers": a.layers if a.mlp else None,
        "optimizer": a.optimizer, "batch": a.batch, "lr": a.lr, "seed": a.seed, "epochs": a.epochs,
        "train_samples": len(xtr), "test_samples": len(xte),
        "steps": sum(h["steps"] for h in history),
        "train_seconds": round(sum(h["train_seconds"] for h in history), 3),
        "seconds": round(sum(h["seconds"] for h in history), 3),
        "train_loss": last["train_loss"], "test_accuracy": last["test_accuracy"],
        "history": history,
    }))


if __name__ == "__main__":
    main()
