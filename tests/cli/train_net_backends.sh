#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `ntpu train --arch` of a small CNN (stride, padding, both pools; host/src/nn/net*.c) on the golden model
# (ref), on the RTL (vsim, vsim:rtl) and on the golden model behind a link that flips and drops bytes:
# the same losses and accuracies, epoch by epoch (bit for bit: tests/cosim/net_backends.c).
set -eu
B=${BUILD:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
ARGS=(--arch conv4k3s2p1,relu,maxpool2,conv8k3p1,relu,avgpool2,fc10 --train-limit 320 --test-limit 128 --epochs 2
      --batch 64 --seed 5 --optimizer adam --lr 0.01)
declare -A DEVS=([ref]=ref [vsim]=vsim [rtl]=vsim:rtl [faulty]=ref:faults=0.0003,fault_seed=4,payload=516)
for dev in ref vsim rtl faulty; do
  "$B/ntpu" train -d "${DEVS[$dev]}" "${ARGS[@]}" --log "$T/$dev.csv" > "$T/$dev.log" 2>&1 \
    || { cat "$T/$dev.log"; exit 1; }
  cut -d, -f1-5 "$T/$dev.csv" > "$T/$dev.metrics"   # epoch, steps, train loss and accuracy, test accuracy
done
cat "$T/ref.metrics"
# The run learns: the second epoch's train loss is below the first's.
awk -F, 'NR == 2 { first = $3 } NR == 3 { if (!($3 < first)) { print "the loss did not fall"; exit 1 } }' "$T/ref.metrics"
for dev in vsim rtl faulty; do
  cmp "$T/ref.metrics" "$T/$dev.metrics" || { echo "losses or accuracies differ between ref and ${DEVS[$dev]}"; exit 1; }
done
echo "PASS train_net_backends"
