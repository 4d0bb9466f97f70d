#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# make demo: trains a small MLP on a Fashion-MNIST subset on the simulated RTL (vsim), shows the loss
# falling and the test accuracy, then runs the trained model in int8 on the same device.
set -eu
NTPU=${1:-build/ntpu}
OUT=${2:-build/demo}
mkdir -p "$OUT"

echo "== the device: the nanoTPU RTL, simulated by Verilator"
"$NTPU" info -d vsim
echo
echo "== training 784-32-10 on 2,048 Fashion-MNIST images for 3 epochs (bf16 on the array, fp32 master weights)"
"$NTPU" train -d vsim --layers 784,32,10 --train-limit 2048 --test-limit 1000 --epochs 3 --batch 64 \
    --optimizer adam --lr 0.003 --seed 1 \
    --save "$OUT/model.safetensors" --log "$OUT/train.csv" --plot "$OUT/train.svg"
echo
echo "== the trained model in bf16 and, quantized, in int8 (on the same RTL)"
"$NTPU" eval -d vsim --model "$OUT/model.safetensors" --test-limit 1000 --int8 --calib 512
echo
echo "Wrote $OUT/model.safetensors (checkpoint), $OUT/train.csv (metrics), $OUT/train.svg (plot)."
echo "Full size, on the golden model (bit-identical to the RTL and much faster to simulate; about 7 s):"
echo "  $NTPU train -d ref --layers 784,256,10 --optimizer adam --lr 0.001 --batch 64 --epochs 5 --seed 0"
