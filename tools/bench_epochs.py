#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The CPU comparison of `make bench`: Fashion-MNIST epochs of `ntpu train -d ref` beside the same
recipe in PyTorch fp32 (tools/bench_torch.py, OpenBLAS, one thread), run back to back in one process
tree, for the MLP (one epoch) and the CNN of issue 23 (--cnn-epochs, for the accuracy curves; 0
leaves the CNN out). When `ntpu train` takes --threads, ref runs with --threads 1 and, beside it,
--threads 2 (one epoch). Prints one JSON object for tools/bench_report.py.

usage: bench_epochs.py [--ntpu build/ntpu] [--data DIR] [--cnn-epochs 5] [--mlp-rounds 3] [--seed 0]
                       [--log-dir DIR] [--train-limit N] [--test-limit N]   (limits: a quick trial)
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

ME = "bench_epochs.py"
HERE = os.path.dirname(os.path.abspath(__file__))
MLP = "784,256,10"
CNN = "conv16k3p1,relu,maxpool2,conv32k3p1,relu,maxpool2,fc10"
RECIPE = ["--optimizer", "adam", "--lr", "0.001", "--batch", "64"]


def run_json(what, cmd):
    """Runs cmd (its stderr passes through) and returns the JSON object on its last '{' line, with
    the CPU seconds (user + system) of the whole process added as process_cpu_seconds: on a shared
    machine they show what waiting for a core added to the wall time."""
    print(f"{ME}: {what}: {' '.join(cmd)}", file=sys.stderr, flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode != 0 or not lines:
        sys.exit(f"{ME}: {what} failed (exit status {p.returncode}{'' if lines else ', no JSON'})")
    j = json.loads(lines[-1])
    j["process_cpu_seconds"] = round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 3)
    return j


def ntpu_train_options(ntpu):
    """Which of --arch and --threads this ntpu's `train --help` lists."""
    p = subprocess.run([ntpu, "train", "--help"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return {opt: f"--{opt}" in p.stdout for opt in ("arch", "threads")}


def torch_run(a, model_args, epochs):
    cmd = ["/usr/bin/python3", os.path.join(HERE, "bench_torch.py"), "--blas", "openblas", "--seed", str(a.seed),
           "--epochs", str(epochs), "--data", a.data] + model_args + RECIPE + a.limits
    return run_json("PyTorch", cmd)


def ref_run(a, model_args, epochs, threads, has):
    cmd = [a.ntpu, "train", "-d", "ref", "--json", "--seed", str(a.seed), "--epochs", str(epochs),
           "--data", a.data] + model_args + RECIPE + a.limits
    if has["threads"]:
        cmd += ["--threads", str(threads)]
    if a.log_dir:  # each epoch's row as it ends: a long run stopped early keeps its curve
        cmd += ["--log", os.path.join(a.log_dir, f"bench-ref-{model_args[1].replace(',', '-')}-t{threads}.csv")]
    return run_json(f"ntpu train -d ref (threads {threads})", cmd)


def compare(a, name, model_args, epochs, has, can_run_ref, why_not, rounds=1):
    """One model: PyTorch, then ref with one thread, `rounds` times alternated (a short run on a shared
    machine is noisy: the round with the median ratio is kept, and every round's times listed); then
    ref with two threads, one epoch, when ntpu has --threads."""
    out = {"model": name, "args": model_args, "epochs": epochs}
    if not can_run_ref:
        out["torch"] = torch_run(a, model_args, epochs)
        out["ref_skipped"] = why_not
        return out
    runs = []
    for _ in range(rounds):
        t = torch_run(a, model_args, epochs)
        r = ref_run(a, model_args, epochs, 1, has)
        # mean epoch wall time (training and test evaluation, data in memory) on both sides
        runs.append((r["seconds"] / t["seconds"], t, r))
    out["ratio"], out["torch"], out["ref"] = sorted(runs, key=lambda x: x[0])[len(runs) // 2]
    if rounds > 1:
        out["rounds"] = [[t["seconds"], r["seconds"]] for _, t, r in runs]
    if has["threads"]:
        out["ref_threads2"] = ref_run(a, model_args, 1, 2, has)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ntpu", default=os.path.join(HERE, "..", "build", "ntpu"))
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--cnn-epochs", type=int, default=int(os.environ.get("BENCH_CNN_EPOCHS", "5")))
    ap.add_argument("--mlp-rounds", type=int, default=3, help="MLP epochs of each, alternated; the median ratio")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--log-dir", help="ntpu train --log DIR/bench-ref-*.csv for each ref run")
    ap.add_argument("--train-limit", type=int, default=0)
    ap.add_argument("--test-limit", type=int, default=0)
    a = ap.parse_args()
    a.limits = ["--train-limit", str(a.train_limit)] if a.train_limit else []
    a.limits += ["--test-limit", str(a.test_limit)] if a.test_limit else []
    if a.mlp_rounds < 1:
        sys.exit(f"{ME}: --mlp-rounds must be 1 or more")
    if a.cnn_epochs < 0:
        sys.exit(f"{ME}: --cnn-epochs must be 0 (no CNN) or more")
    if not os.access(a.ntpu, os.X_OK):
        sys.exit(f"{ME}: no ntpu binary at {a.ntpu} (make build/ntpu, or give --ntpu)")
    has = ntpu_train_options(a.ntpu)
    t0 = time.time()
    res = {"seed": a.seed, "ntpu_threads_option": has["threads"], "ntpu_arch_option": has["arch"],
           "mlp": compare(a, "mlp", ["--layers", MLP], 1, has, True, "", a.mlp_rounds)}
    if a.cnn_epochs:
        res["cnn"] = compare(a, "cnn", ["--arch", CNN], a.cnn_epochs, has, has["arch"],
                             "this ntpu's train has no --arch")
    res["seconds"] = round(time.time() - t0, 1)
    print(json.dumps(res))


if __name__ == "__main__":
    main()
