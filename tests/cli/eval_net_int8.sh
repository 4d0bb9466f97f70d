#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `ntpu eval --model F --int8` of a conv net's checkpoint (host/src/nn/quant_net.c): a small CNN trained
# and saved by `ntpu train --arch` keeps its bf16 test accuracy in int8 within 2 points, and `ref`,
# `vsim` and `vsim:rtl` print the same int8 accuracy (their logits are the same bits:
# tests/cosim/net_backends.c).
set -eu
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
"$B/ntpu" train -d ref --arch conv8k3s2p1,relu,maxpool2,fc10 --train-limit 3200 --test-limit 64 --epochs 1 \
  --batch 50 --seed 3 --optimizer adam --lr 0.003 --save "$T/cnn.safetensors" > "$T/train.log" 2>&1 \
  || { cat "$T/train.log"; exit 1; }
for dev in ref vsim vsim:rtl; do
  "$B/ntpu" eval -d "$dev" --model "$T/cnn.safetensors" --int8 --calib 500 --test-limit 600 --json \
    > "$T/$dev.json" 2> "$T/err" || { cat "$T/err"; exit 1; }
done
cat "$T/ref.json"
python3 - "$T/ref.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
bf16, int8 = r["test_accuracy"], r["int8_accuracy"]
assert bf16 > 0.65, f"bf16 accuracy {bf16}: the net did not train"
assert abs(int8 - bf16) < 0.02, f"int8 {int8} is not within 2 points of bf16 {bf16}"
PY
for dev in vsim vsim:rtl; do
  a=$(grep -o '"int8_accuracy":[0-9.]*' "$T/ref.json"); b=$(grep -o '"int8_accuracy":[0-9.]*' "$T/$dev.json")
  [ "$a" = "$b" ] || { echo "int8 on $dev ($b) differs from ref ($a)"; exit 1; }
done
echo "PASS eval_net_int8"
