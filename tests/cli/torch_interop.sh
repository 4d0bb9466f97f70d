#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checkpoints between nanoTPU and PyTorch (docs/training.md, Checkpoints), for an MLP and two CNNs:
# (a) a model trained by `ntpu train -d ref --save F` loads into the torch.nn.Sequential of the SPEC in F's
#     metadata with a strict load_state_dict, and predicts the classes ntpu predicts (>= 99.5 % agree);
# (b) a model trained in PyTorch and saved as safetensors.torch.save_file(model.state_dict(), F) writes it
#     runs in `ntpu eval --model F --arch SPEC`: the same accuracy within 0.5 points, >= 99.5 % of the
#     classes the same (bf16 matmuls against PyTorch's fp32).
# Skipped (exit 77) only when PyTorch is missing: `make deps` installs Debian's python3-torch.
set -eu
B=${BUILD:-build}
D=/usr/share/datasets/fashion-mnist
PY=/usr/bin/python3
H=tests/cli/torch_interop.py
N=2000 # test samples compared
$PY -c 'import torch' 2> /dev/null || { echo "skip: PyTorch is not installed (python3-torch)"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# SPEC, and how ntpu train is asked for it
MODELS=("fc64,relu,fc10|--layers 784,64,10"
        "conv8k3p1,relu,maxpool2,conv16k3s2,relu,flatten,fc10|--arch conv8k3p1,relu,maxpool2,conv16k3s2,relu,flatten,fc10"
        "conv6k5s2p2,relu,avgpool2,fc10|--arch conv6k5s2p2,relu,avgpool2,fc10") # an implied flatten: no module
for m in "${MODELS[@]}"; do
  spec=${m%%|*}
  echo "== $spec"
  # (a) nanoTPU -> PyTorch
  "$B/ntpu" train -d ref ${m#*|} --optimizer adam --lr 0.002 --train-limit 2048 --test-limit 64 --epochs 1 \
    --save "$T/a.st" > "$T/train.log" 2>&1 || { cat "$T/train.log"; exit 1; }
  "$B/ntpu" eval -d ref --model "$T/a.st" --test-limit $N --logits "$T/a.npy"
  $PY $H load "$T/a.st" $D $N "$T/a.npy"
  # (b) PyTorch -> nanoTPU
  $PY $H train "$spec" $D 300 $N "$T/b.st"
  "$B/ntpu" eval -d ref --model "$T/b.st" --arch "$spec" --test-limit $N --logits "$T/b.npy"
  $PY $H compare "$T/b.st.logits.npy" "$T/b.npy" $D
done
echo "PASS torch_interop"
